package creative

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/creativegen/creative-go/ids"
)

// Request types marshal with the wire's field names, so that a request
// logged as JSON reads as the service's documentation does.

func TestTextToImageRequestMarshalsWithTheWireNames(t *testing.T) {
	b, err := json.Marshal(TextToImageRequest{
		Prompt:          "a fox",
		NumberOfResults: 2,
		ImageSizeID:     ids.Size3x2,
		StyleID:         ids.StyleAnime,
		CameraID:        ids.CameraCloseUp,
		ColorID:         ids.ColorVibrant,
		LightingID:      ids.LightingGoldenHour,
	})
	require.NoError(t, err)
	assert.JSONEq(t, `{
		"prompt": "a fox",
		"numberOfResults": 2,
		"imageSizeId": "`+string(ids.Size3x2)+`",
		"styleId": "`+string(ids.StyleAnime)+`",
		"cameraId": "`+string(ids.CameraCloseUp)+`",
		"colorId": "`+string(ids.ColorVibrant)+`",
		"lightingId": "`+string(ids.LightingGoldenHour)+`"
	}`, string(b))

	b, err = json.Marshal(TextToImageRequest{Prompt: "a fox", NumberOfResults: 1})
	require.NoError(t, err)
	assert.Equal(t, `{"prompt":"a fox","numberOfResults":1}`, string(b), "unset ids are left out")
}

func TestEveryJSONRequestTypeHasATagOnEveryField(t *testing.T) {
	for _, v := range []any{
		TextToImageRequest{}, GenerateLogoRequest{}, GenerateQRRequest{}, UpScaleRequest{},
		RemoveBackgroundRequest{}, ColorImageRequest{}, EnhanceImageRequest{},
		TextToMusicRequest{}, TextToSpeechRequest{}, WriterToolRequest{},
		InfiniteZoomRequest{}, RemoveVideoBackgroundRequest{},
	} {
		typ := reflect.TypeOf(v)
		for f := range typ.Fields() {
			if f.IsExported() {
				assert.NotEmpty(t, f.Tag.Get("json"), "%s.%s", typ.Name(), f.Name)
			}
		}
	}
}
