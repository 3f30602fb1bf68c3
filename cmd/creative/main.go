// Command creative calls the Creative Generation Service from the shell:
// one command per operation, mirroring the API path /<area>/v1/<operation>,
// and batch, which runs a file of jobs.
//
//	creative image text-to-image --prompt "a fox" --number-of-results 2 --style-id anime
//	creative audio text-to-speech --prompt "Hello" --voice-id female-1
//	creative --fake image generate-qr --url https://example.com --prompt flowers --out /tmp/q
//	creative batch jobs.jsonl --out results --concurrency 8 --shard 0/4
//
// Results are written to --out (images decoded, generated files downloaded,
// speech saved) and each written path is printed on its own line; the
// writer tool's text goes to stdout. The access key is read from
// CREATIVE_ACCESS_KEY and the base URL from --base-url or CREATIVE_BASE_URL;
// --fake runs against the built-in fake service instead and needs neither.
// Every command has --help; `creative completion bash` (zsh, fish,
// powershell) prints a completion script, which in bash needs the
// bash-completion package, version 2.
//
// Exit status: 0 on success, 1 on an API or network error (for batch: some
// job failed), 2 on a usage, configuration or validation error (then
// nothing was sent), 130 when interrupted by Ctrl-C or SIGTERM.
//
// creative links no cloud SDK, so that a command that touches no bucket
// starts fast. A bucket URL (s3://, gs://, azblob://) as batch's jobs file
// or --out is opened by creative-cloud, which go install ./cmd/creative/...
// installs beside creative: creative hands such a command over to it.
package main

import (
	"os"

	"github.com/creativegen/creative-go/cmd/creative/internal/cli"
)

func main() {
	// Bucket URLs are opened by creative-cloud, which this hands a
	// command that names one over to: no cloud SDK is linked here.
	os.Exit(cli.Main(nil))
}
