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
// them, a streamed Audio for speech, a WriterResult for text. A request that
// cannot succeed fails with a *ValidationError before any byte is sent; an
// answer that is not a success is an *APIError; a call that got no answer is
// a *NetworkError. Classify them with errors.Is and the Err* sentinels.
//
// Failed attempts are retried on connection failures and on 408, 429, 500,
// 502, 503 and 504, with exponential backoff and full jitter, honouring
// Retry-After up to MaxRetryAfter. The access key is sent only to the base
// URL's origin and never appears in errors, logs or formatted values.
//
// Package creativetest runs the whole service in process, for tests and for
// trying the SDK without a key or a network.
package creative
