package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"runtime"
	"testing"

	creative "github.com/creativegen/creative-go"
)

// maxAllocPerDecoded is the most bytes the SDK may allocate per decoded
// image byte at any answer size: the body is base64 (4/3 of the images)
// read into one buffer of its length and decoded in place, so 4/3 and a
// little for the walk.
const maxAllocPerDecoded = 1.4

// minCalls is the fewest calls the bound is judged on.
const minCalls = 8

// BenchmarkImageSizes is BenchmarkImages's sdk case (one text-to-image
// answer of ten images) at 1, 10, 50 and 100 MiB of images: the bytes
// allocated per decoded byte (alloc-B/decoded-B) stay flat, at most
// maxAllocPerDecoded, whatever the answer's size. A size past it fails.
func BenchmarkImageSizes(b *testing.B) {
	for _, mib := range []int{1, 10, 50, 100} {
		b.Run(fmt.Sprintf("%dMiB", mib), func(b *testing.B) {
			const n = 10
			size := mib << 20 / n
			img := make([]byte, size)
			_, _ = rand.Read(img)
			enc := base64.StdEncoding.EncodeToString(img)
			var body bytes.Buffer
			body.WriteString(`{"success":true,"message":"Images generated","data":[`)
			for i := range n {
				if i > 0 {
					body.WriteString(",")
				}
				body.WriteString(`{"base64":"` + enc + `"}`)
			}
			body.WriteString("]}")
			enc = ""
			s := newServer(b, "application/json", body.Bytes())
			c := sdkClient(b, s.URL)
			req := creative.TextToImageRequest{Prompt: "a fox", NumberOfResults: n}
			call := func() error {
				ims, err := c.TextToImage(context.Background(), req)
				if err == nil && (len(ims) != n || !bytes.Equal(ims[n-1].Data, img)) {
					err = fmt.Errorf("want %d images of %d bytes", n, size)
				}
				return err
			}
			if err := call(); err != nil { // warm: the connection and the pools
				b.Fatal(err)
			}
			decoded := float64(n * size)
			b.SetBytes(int64(decoded))
			m := measure(b, call)
			per := m.bytes / decoded
			if b.N < minCalls {
				// One call's figure moves by a few hundredths with what
				// else the process allocates meanwhile (the server runs in
				// it): judge the bound on minCalls calls.
				var start, end runtime.MemStats
				runtime.ReadMemStats(&start)
				for range minCalls {
					if err := call(); err != nil {
						b.Fatal(err)
					}
				}
				runtime.ReadMemStats(&end)
				per = float64(end.TotalAlloc-start.TotalAlloc) / minCalls / decoded
			}
			b.ReportMetric(per, "alloc-B/decoded-B")
			if per > maxAllocPerDecoded {
				b.Errorf("%.3f bytes allocated per decoded byte, want at most %.2f", per, maxAllocPerDecoded)
			}
		})
	}
}
