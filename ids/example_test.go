package ids_test

import (
	"fmt"

	"github.com/creativegen/creative-go/ids"
)

func ExampleParseStyle() {
	id, err := ids.ParseStyle("Digital-Art")
	if err != nil {
		panic(err)
	}
	label, _ := id.Label()
	fmt.Println(id == ids.StyleDigitalArt, id, label)
	_, err = ids.ParseStyle("oil")
	fmt.Println(err != nil)
	// Output:
	// true 6644b0c5ec3658a8e38d94ed digital art
	// true
}

func ExampleVoicesByGender() {
	for _, v := range ids.VoicesByGender(ids.Female)[:3] {
		label, _ := v.Label()
		fmt.Println(label, v)
	}
	// Output:
	// female 1 52f254abbd463029dd655422
	// female 2 b054b7a4a1dbabba96a691dd
	// female 3 127de703d939930eb0a85420
}

func ExampleParseImageSize() {
	id, err := ids.ParseImageSize("16:9")
	if err != nil {
		panic(err)
	}
	w, h, _ := id.Aspect()
	fmt.Println(id == ids.Size16x9, id, w, h)
	// Output: true 6644b0c5ec3658a8e38d9520 16 9
}

func ExampleParseCamera() {
	// "Fish Eye" is the label of the service's public docs; the
	// specification's, "fisheye lens", is the one Label gives.
	id, err := ids.ParseCamera("Fish Eye")
	if err != nil {
		panic(err)
	}
	label, _ := id.Label()
	fmt.Println(id == ids.CameraFisheyeLens, label)
	// Output: true fisheye lens
}
