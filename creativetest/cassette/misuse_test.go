package cassette_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync/atomic"
	"testing"

	creative "github.com/creativegen/creative-go"
	"github.com/creativegen/creative-go/creativetest/cassette"
)

// Every method of a nil *Cassette (what FromEnv returns when no cassette
// is asked for) and of a zero Cassette returns or fails, and never panics;
// a call through the Option of either fails before anything is sent.
func TestANilOrZeroCassetteFailsAndNeverPanics(t *testing.T) {
	t.Setenv(cassette.EnvCassette, "")
	fromEnv, err := cassette.FromEnv(nil)
	if err != nil || fromEnv != nil {
		t.Fatalf("FromEnv without %s: %v, %v; want nil, nil", cassette.EnvCassette, fromEnv, err)
	}
	cases := map[string]*cassette.Cassette{"nil": nil, "FromEnv unset": fromEnv, "zero": {}}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			rv := reflect.ValueOf(c)
			for i := range rv.NumMethod() {
				m := rv.Method(i)
				if rv.Type().Method(i).Name == "Format" { // fmt's to call, with its own fmt.State
					_ = fmt.Sprintf("%v %+v %#v %s", c, c, c, c)
					continue
				}
				args := make([]reflect.Value, m.Type().NumIn())
				for j := range args {
					args[j] = reflect.Zero(m.Type().In(j))
				}
				if m.Type().IsVariadic() {
					args = args[:len(args)-1]
				}
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("%s: panic %v", rv.Type().Method(i).Name, p)
						}
					}()
					m.Call(args)
				}()
			}
			if _, err := c.Client(); err == nil {
				t.Error("Client: no error")
			}
			var sent atomic.Int64
			hc := &http.Client{Transport: roundTripper(func(r *http.Request) (*http.Response, error) {
				sent.Add(1)
				return nil, fmt.Errorf("the network is unreachable")
			})}
			cl, err := creative.New(creative.WithBaseURL("https://creative.invalid"), creative.WithAccessKey("ck_live_abcdefgh"),
				creative.WithHTTPClient(hc), c.Option())
			if err != nil {
				t.Fatal(err)
			}
			_, err = cl.TextToMusic(context.Background(), creative.TextToMusicRequest{Prompt: "jazz", Duration: 2})
			if !errors.Is(err, creative.ErrNotSent) || sent.Load() != 0 {
				t.Errorf("a call through its Option: %v, %d sent; want ErrNotSent and nothing sent", err, sent.Load())
			}
		})
	}
}

// The errors of the package say what they are when nil, as the SDK's do.
func TestNilErrorsOfThePackageSayWhatTheyAre(t *testing.T) {
	for _, err := range []error{(*cassette.MissError)(nil), (*cassette.CheckError)(nil)} {
		func() {
			defer func() {
				if p := recover(); p != nil {
					t.Errorf("%T: Error panics: %v", err, p)
				}
			}()
			if s := err.Error(); s == "" {
				t.Errorf("%T: empty text", err)
			}
		}()
	}
}
