// Command creative calls the Creative Generation Service from the shell:
// one command per operation, mirroring the API path /<area>/v1/<operation>.
//
//	creative image text-to-image --prompt "a fox" --number-of-results 2 --style-id anime
//	creative audio text-to-speech --prompt "Hello" --voice-id "female 1"
//	creative --fake image generate-qr --url https://example.com --prompt flowers --out /tmp/q
//
// Results are written to --out (images decoded, generated files downloaded,
// speech saved) and each written path is printed on its own line; the
// writer tool's text goes to stdout. The access key is read from
// CREATIVE_ACCESS_KEY and the base URL from --base-url or CREATIVE_BASE_URL;
// --fake runs against the built-in fake service instead and needs neither.
//
// Exit status: 0 on success, 1 on an API or network error, 2 on a usage,
// configuration or validation error (then nothing was sent).
package main

import (
	"os"
)

func main() {
	a := &app{stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, progress: isTerminal(os.Stderr)}
	os.Exit(a.run(os.Args[1:]))
}

// isTerminal reports whether f is a character device, such as a terminal.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
