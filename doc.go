// Package creative is a typed client for the Creative Generation Service:
// sixteen operations that write text, make and transform images, music,
// speech and video.
//
// Create one Client and share it:
//
//	c, err := creative.New() // reads CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY
//	imgs, err := c.TextToImage(ctx, creative.TextToImageRequest{
//		Prompt:          "a lighthouse at dawn",
//		NumberOfResults: 2,
//		StyleID:         ids.StyleWatercolor,
//	})
//
// Every method takes a context and a request struct and returns a typed
// result: a URL for generated files, an Image (decoded bytes) or a list of
// them, a streamed Audio for speech, a WriterResult for text.
//
// # Saving results
//
// Images are in memory; Save writes one atomically (a temporary file, then
// a rename). Speech is a stream that holds a connection until it is
// closed: Save and WriteTo close it, and a deferred Close covers every
// other path. A URL is a generated file on the service's side, fetched
// without the access key:
//
//	for i, im := range imgs {
//		if err := im.Save(fmt.Sprintf("lighthouse-%d%s", i+1, im.Ext())); err != nil {
//			return err
//		}
//	}
//
//	speech, err := c.TextToSpeech(ctx, creative.TextToSpeechRequest{Prompt: "Hello", VoiceID: ids.VoiceFemale1})
//	if err != nil {
//		return err
//	}
//	defer speech.Close()
//	if err := speech.Save("hello" + speech.Ext()); err != nil {
//		return err
//	}
//
//	music, err := c.TextToMusic(ctx, creative.TextToMusicRequest{Prompt: "calm piano"})
//	if err != nil {
//		return err
//	}
//	_, err = c.DownloadFile(ctx, music, "piano.wav")
//
// # Errors and retries
//
// A request that cannot succeed fails with a *ValidationError before any
// byte is sent; an answer that is not a success is an *APIError; a call
// that got no answer is a *NetworkError. Classify them with errors.Is and
// the Err* sentinels. ErrOutcomeUnknown marks a call whose request reached
// the service whole without a definitive answer: the service may have done
// the work and charged for it, so the call is not sent again.
//
// Failed attempts are sent again only when the service cannot have done
// the work, with exponential backoff and full jitter, honouring
// Retry-After up to MaxRetryAfter. The access key is sent only to the base
// URL's origin and never appears in errors, logs or formatted values.
//
// # Testing code that uses the SDK
//
// Package creativetest runs the whole service in process, for tests and
// for trying the SDK without a key or a network. Its Server records what
// arrived and injects faults:
//
//	func TestReport(t *testing.T) {
//		srv := creativetest.Start(t) // closed when the test ends
//		srv.Fail("image/text-to-image", creativetest.Fault{Status: 503, RetryAfter: "1"})
//		c := srv.Client(creativetest.InstantRetryAfter()) // no real second's wait
//
//		if err := makeReport(context.Background(), c); err != nil {
//			t.Fatal(err)
//		}
//		if n := srv.Count("image/text-to-image"); n != 2 {
//			t.Errorf("called %d times, want 2: the 503, then the retry", n)
//		}
//	}
package creative
