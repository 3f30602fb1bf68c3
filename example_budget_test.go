package creative_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
)

// A service that splits audio into more parts than DefaultMaxLinks is
// allowed to, for a call or for a Client, with WithMaxLinks.
func ExampleWithMaxLinks() {
	srv := creativetest.NewServer()
	defer srv.Close()
	srv.Handle("audio/split-audio", func(w http.ResponseWriter, r *http.Request) {
		links := make([]string, 20)
		for i := range links {
			links[i] = fmt.Sprintf(`"https://files.example/stem-%d.wav"`, i+1)
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"success":true,"data":[`+strings.Join(links, ",")+`]}`)
	})
	c := srv.Client()
	song := creative.FileFromBytes("song.wav", []byte("RIFF\x24\x00\x00\x00WAVEfmt "))

	_, err := c.SplitAudio(context.Background(), creative.SplitAudioRequest{Audio: song})
	fmt.Println(err != nil)
	stems, err := c.SplitAudio(context.Background(), creative.SplitAudioRequest{Audio: song}, creative.WithMaxLinks(32))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	fmt.Println(len(stems), "stems")
	// Output:
	// true
	// 20 stems
}

// A Client that reads very large answers, or many at once, and has the
// memory for them raises the budget its calls share.
func ExampleWithAnswerBudget() {
	srv := creativetest.NewServer()
	defer srv.Close()
	c, err := creative.New(creative.WithBaseURL(srv.URL), creative.WithAccessKey(srv.AccessKey),
		creative.WithAnswerBudget(1<<30)) // 1 GiB of answers in flight
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return
	}
	_ = c
	fmt.Println(creative.DefaultAnswerBudget>>20, "MiB by default")
	// Output: 256 MiB by default
}
