package opcall_test

import (
	"bytes"
	"context"
	"errors"
	"image"
	imagepng "image/png"
	"io"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest"
	"github.com/creativegen/creative-go/ids"
	"github.com/creativegen/creative-go/internal/opcall"
	"github.com/creativegen/creative-go/internal/ops"
)

// typical gives each field of the table a value the fake accepts; mp3 is
// speech the fake made.
func typical(t *testing.T, f ops.Field, mp3 []byte) any {
	t.Helper()
	switch f.Type {
	case ops.Number:
		return 2.0
	case ops.Link:
		return "https://example.com/a.png"
	case ops.Array:
		return []any{map[string]any{"jobRole": "Engineer", "jobSkills": "Go"}}
	case ops.File:
		var png bytes.Buffer
		require.NoError(t, imagepng.Encode(&png, image.NewGray(image.Rect(0, 0, 4, 4))))
		if f.Name == "audio" {
			return creative.FileFromBytes("a.mp3", mp3)
		}
		return creative.FileFromBytes("a.png", png.Bytes())
	case ops.ID:
		id, err := ids.Parse(f.IDKind, map[string]string{"voice": "female 1", "enhance-type": "podcast"}[f.IDKind])
		if err != nil || f.IDKind != "voice" && f.IDKind != "enhance-type" {
			return ""
		}
		return id
	}
	switch f.Name {
	case "useCase":
		return "CoverLetter"
	case "action":
		return ""
	}
	return "words for " + f.Name
}

// Every row of the table names a method of the Client whose request type
// holds exactly the row's fields, under the row's names; each builds from
// named fields and calls the fake.
func TestEveryOperationBuildsItsRequestAndCallsItsMethod(t *testing.T) {
	srv := creativetest.Start(t)
	speech, err := srv.Client().TextToSpeech(context.Background(), creative.TextToSpeechRequest{Prompt: "hello", VoiceID: ids.VoiceFemale1})
	require.NoError(t, err)
	mp3, err := io.ReadAll(speech)
	require.NoError(t, err)
	speech.Close()
	srv.Reset()
	for _, op := range ops.All {
		t.Run(op.Name, func(t *testing.T) {
			fields := map[string]any{}
			for _, f := range op.Fields {
				if v := typical(t, f, mp3); v != "" {
					fields[f.Name] = v
				}
			}
			req, err := opcall.Build(op, fields)
			require.NoError(t, err)
			typ := reflect.TypeOf(req)
			assert.Equal(t, len(op.Fields), typ.NumField(), "%s holds the row's fields and no others", typ)
			require.NoError(t, req.Validate())
			res, err := opcall.Call(context.Background(), srv.Client(), op, req)
			require.NoError(t, err)
			if a, ok := res.(*creative.Audio); ok {
				a.Close()
			}
			assert.Equal(t, 1, srv.Count(op.Name), "the call arrived")
		})
	}
}

func TestBuildNamesTheFieldAtFault(t *testing.T) {
	op, _ := ops.Lookup(ops.TextToImage)
	for _, tc := range []struct {
		fields map[string]any
		want   string
	}{
		{map[string]any{"colour": "red"}, "colour: image/text-to-image takes no such field"},
		{map[string]any{"prompt": 3.0}, "prompt: must be a string, got float64"},
		{map[string]any{"numberOfResults": 1.5}, "numberOfResults: must be a whole number, got 1.5"},
		{map[string]any{"numberOfResults": "2"}, "numberOfResults: must be a whole number, got 2"},
		{map[string]any{"numberOfResults": 3e9}, "numberOfResults: is out of range, got 3e+09"},
	} {
		_, err := opcall.Build(op, tc.fields)
		assert.EqualError(t, err, tc.want)
	}
	req, err := opcall.Build(op, map[string]any{"prompt": "a fox", "numberOfResults": 11.0})
	require.NoError(t, err)
	var ve *creative.ValidationError
	require.True(t, errors.As(req.Validate(), &ve))
	assert.Equal(t, "numberOfResults", ve.Field)
	assert.Equal(t, creative.TextToImageRequest{Prompt: "a fox", NumberOfResults: 11}, req)
}
