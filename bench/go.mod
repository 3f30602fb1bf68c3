module github.com/creativegen/creative-go/bench

go 1.26.0

require (
	github.com/creativegen/creative-go v0.0.0
	github.com/creativegen/creative-go/batch/pgledger v0.0.0
	github.com/creativegen/creative-go/batch/sqliteledger v0.0.0
	github.com/segmentio/asm v1.2.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/dustin/go-humanize v1.1.0 // indirect
	github.com/go-json-experiment/json v1.27.2 // indirect
	github.com/google/go-querystring v1.2.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	github.com/hashicorp/go-retryablehttp v0.7.8 // indirect
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/pgx/v5 v5.12.0 // indirect
	github.com/mattn/go-isatty v0.0.24 // indirect
	github.com/ncruces/go-strftime v1.1.0 // indirect
	github.com/remyoudompheng/bigfft v0.0.0-20230129092748-24d4a6f8daec // indirect
	golang.org/x/image v0.47.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	golang.org/x/time v0.16.0 // indirect
	modernc.org/libc v1.80.1 // indirect
	modernc.org/mathutil v1.7.1 // indirect
	modernc.org/memory v1.12.1 // indirect
	modernc.org/sqlite v1.62.0 // indirect
)

replace github.com/creativegen/creative-go => ../

replace github.com/creativegen/creative-go/batch/sqliteledger => ../batch/sqliteledger

replace github.com/creativegen/creative-go/batch/pgledger => ../batch/pgledger
