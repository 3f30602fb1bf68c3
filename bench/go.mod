module github.com/creativegen/creative-go/bench

go 1.26.0

require (
	github.com/creativegen/creative-go v0.0.0
	github.com/segmentio/asm v1.2.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	golang.org/x/image v0.47.0 // indirect
	golang.org/x/time v0.16.0 // indirect
)

replace github.com/creativegen/creative-go => ../
