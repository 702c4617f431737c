module github.com/agiraph/agiraph/internal/lease

go 1.26.0

require (
	github.com/agiraph/agiraph v0.0.0-00010101000000-000000000000
	github.com/agiraph/agiraph/checkpoint/postgres v0.0.0-00010101000000-000000000000
	github.com/agiraph/agiraph/internal/pgtest v0.0.0-00010101000000-000000000000
	github.com/google/uuid v1.6.0
	github.com/jackc/pgx/v5 v5.12.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/jackc/pgpassfile v1.0.0 // indirect
	github.com/jackc/pgservicefile v0.0.0-20240606120523-5a60cdf6a761 // indirect
	github.com/jackc/puddle/v2 v2.2.3 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

// The repository's own modules, from the same commit (go.work does the same for its commands).
replace (
	github.com/agiraph/agiraph => ../..
	github.com/agiraph/agiraph/checkpoint/postgres => ../../checkpoint/postgres
	github.com/agiraph/agiraph/internal/pgtest => ../pgtest
)
