// Package creativetest runs the Creative Generation Service in process, for
// tests and for trying the SDK with no key and no network.
//
// A Server answers all sixteen operations on 127.0.0.1 the way the service's
// interface specification says: it checks the access key, the method, the
// content type, required fields and their JSON types, the limits and the
// known ids, and answers with real media: PNG images of the requested
// aspect, a QR code that scans, MP3 speech, WAV music, animated GIF video.
// A request is held to the rules the SDK checks before it sends anything
// (each request type's Validate), so that the fake and the SDK refuse a
// value with the same words, and to what only the wire shows: every field
// the specification requires is sent, those the SDK fills in when left
// empty too (numberOfResults, the writer's number and action), each as a
// JSON value of its type. Files it links to are served under /files/ without a key. It records the
// requests it receives, can fail operations on purpose (status codes,
// Retry-After, latency, dropped connections) and can hand an operation to
// a handler of yours. Every answer carries an X-Request-Id.
//
// In a test, Start(t) starts a Server and closes it when the test ends, and
// Server.Client returns an SDK client wired to it; InstantRetryAfter makes
// that client retry an injected Retry-After at once:
//
//	srv := creativetest.Start(t)
//	srv.Fail("image/generate-qr", creativetest.Fault{Status: 503, RetryAfter: "1"})
//	c := srv.Client(creativetest.InstantRetryAfter())
//	img, err := c.GenerateQR(ctx, req) // succeeds, without a second's wait
//	// srv.Count("image/generate-qr") == 2
//
// Every refusal is HTTP 400 with the error envelope
// {"success":false,"message":"<field>: <what is wrong>"}, naming the field,
// except for these choices of the fake, made where the specification shows
// nothing:
//
//   - a missing or wrong x-access-key is HTTP 401 with the error envelope;
//   - a method other than POST on an operation's path is HTTP 405, and a
//     path that is no operation is HTTP 404, both with the error envelope;
//   - generate-logo answers one logo as an object {"base64": ...} and
//     several as a list of such objects;
//   - limits the specification leaves open: text-to-music duration at most
//     300 seconds, infinite-zoom numberOfIteration at most 20, up-scale
//     scale at most 8 (default 2), writer-tool number at most 5, uploads of
//     at most 64 MiB a part (WithMaxUpload), text fields of at most 1 MiB,
//     JSON bodies of at most 1 MiB;
//   - a number sent as 0 is refused: every number the service takes is
//     above 0, and a request of the SDK leaves a number out rather than
//     send 0;
//   - lightingId accepts any well-formed id, since the specification's list
//     is cut short; the other id fields accept only the listed ids;
//   - text-to-image takes its size as imageSizeId or dimensionsId, and
//     both must be the same id when both are sent;
//   - audio uploads must be WAV or MP3, the only audio the fake reads;
//   - links (the url field) are fetched only from the Server itself and from
//     loopback addresses, with a short timeout; for any other host a
//     generated stand-in takes the linked file's place, so nothing ever
//     leaves the machine.
package creativetest
