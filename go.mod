module github.com/creativegen/creative-go

go 1.26.0

require (
	github.com/go-json-experiment/json v1.27.2
	github.com/google/go-querystring v1.2.0
	github.com/hajimehoshi/go-mp3 v0.3.4
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/jarcoal/httpmock v1.4.2
	github.com/makiuchi-d/gozxing v0.1.1
	github.com/segmentio/asm v1.2.1
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/image v0.47.0
	golang.org/x/sys v0.49.0
	golang.org/x/time v0.16.0
	rsc.io/qr v0.2.0
)

require (
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/xerrors v0.0.0-20200804184101-5ec99f83aff1 // indirect
)
