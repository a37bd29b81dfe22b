# Sonde — see README.md. Every target works from a fresh clone with Go 1.26.
SHELL := /bin/bash
GO ?= go
MODULES := contracts pkg services/executor services/gateway services/modelturn services/orchestrator services/sonde
PKGS := $(MODULES:%=./%/...)

.PHONY: all build demo test vet fmt-check bench schemas clean

all: build

## build: compile bin/sonde, the all-in-one binary.
build:
	$(GO) build -o bin/sonde ./services/sonde

## demo: start sonde on the embedded default, run one investigation, print the report.
demo: build
	./scripts/demo.sh

## test: the whole suite (vet, formatting, race-enabled tests on real NATS and SQLite).
test: fmt-check vet
	$(GO) test -race -count=1 -timeout 20m $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l contracts pkg services); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## bench: the benchmarks written up in docs/benchmarks.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./pkg/ledger/ ./services/sonde/e2e/ ./services/executor/

## schemas: regenerate contracts/schema/*.json from the Go types.
schemas:
	$(GO) test ./contracts/ -run TestSchemas -update

clean:
	rm -rf bin .sonde-demo
