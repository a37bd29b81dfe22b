module github.com/sondehq/sonde/services/orchestrator

go 1.26.0

require (
	github.com/sondehq/sonde/contracts v0.0.0
	github.com/sondehq/sonde/pkg v0.0.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/nats-io/nats.go v1.55.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace (
	github.com/sondehq/sonde/contracts => ../../contracts
	github.com/sondehq/sonde/pkg => ../../pkg
)
