// Command creative-cloud is the half of creative that opens bucket URLs
// (s3://, gs://, azblob://, mem://) as batch's jobs file and --out: it
// links the cloud SDKs, which creative does not, so that commands that
// touch no bucket start without loading them. Users run creative, which
// hands a command that names a bucket URL over to creative-cloud, found
// through $CREATIVE_CLOUD, beside creative or on PATH; go install
// ./cmd/creative/... installs both. creative-cloud takes the same
// arguments as creative, and refuses (exit status 2) a hand-off from a
// creative of another version.
//
// Building it with -tags disable_grpc_modules leaves out gRPC packages
// that Google Cloud Storage's SDK brings and gs:// does not use, and makes
// it smaller.
package main

import (
	"os"

	"github.com/creativegen/creative-go/cmd/creative/internal/bucket"
	"github.com/creativegen/creative-go/cmd/creative/internal/cli"
)

func main() {
	os.Exit(cli.Main(&cli.Buckets{Open: bucket.OpenStore, OpenFS: bucket.OpenFS}))
}
