# Sonde — see README.md. Every target works from a fresh clone with Go 1.26.
SHELL := /bin/bash
GO ?= go
MODULES := contracts pkg services/executor services/gateway services/modelturn services/orchestrator services/sonde
PKGS := $(MODULES:%=./%/...)

.PHONY: all build demo test vet fmt-check bench schemas clean toolchain testdeps mutants

all: build

# toolchain: gcc and g++ for cgo (libpg_query, DuckDB), installed if missing.
toolchain:
	@./scripts/toolchain.sh

# testdeps: chromium (console browser tests) and Node with npm (the MCP
# TypeScript SDK client tests), installed if missing.
testdeps:
	@./scripts/testdeps.sh

## build: compile bin/sonde, the all-in-one binary, its version stamped
## (VERSION=… overrides; sonde version prints it, "dev" for a plain go build).
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
build: toolchain
	$(GO) build -ldflags "-X github.com/sondehq/sonde/services/sonde/internal/cli.Version=$(VERSION)" -o bin/sonde ./services/sonde

## demo: start sonde on the embedded default, run one investigation, print the report.
demo: build
	./scripts/demo.sh

## test: the whole suite (vet, formatting, race-enabled tests on real NATS, SQLite and PostgreSQL,
## a headless Chromium for the console, the MCP TypeScript SDK from npm).
## A throwaway PostgreSQL (scripts/postgres.sh) serves the PostgreSQL tests through
## SONDE_TEST_PG_URL. make test asks for them (SONDE_TEST_PG_REQUIRED=1): when no
## server can be started it stops, and no PostgreSQL test can pass by skipping.
## SONDE_TEST_PG=skip runs the rest without PostgreSQL, on purpose.
test: toolchain testdeps fmt-check vet
	@set -uo pipefail; \
	if [ "$${SONDE_TEST_PG:-}" = skip ]; then echo "make test: PostgreSQL tests skipped (SONDE_TEST_PG=skip)" >&2; \
	elif pg="$$(./scripts/postgres.sh start)"; then eval "$$pg"; export SONDE_TEST_PG_REQUIRED=1; \
	  trap './scripts/postgres.sh stop "$$SONDE_TEST_PG_DIR"' EXIT; \
	else echo "make test: could not start PostgreSQL for the PostgreSQL tests (SONDE_TEST_PG=skip runs the rest without them)" >&2; exit 1; fi; \
	$(GO) test -race -count=1 -timeout 30m $(PKGS)

vet:
	$(GO) vet $(PKGS)

fmt-check:
	@out=$$(gofmt -l contracts pkg services); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

## mutants: break each safety rule on purpose (scripts/mutants.sh lists them)
## and fail if a focused test still passes; docs/testing.md. Set
## SONDE_TEST_PG_URL, or a throwaway PostgreSQL is started for the PostgreSQL mutants.
mutants: toolchain
	./scripts/mutants.sh

## bench: the benchmarks written up in docs/benchmarks.md.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./pkg/ledger/ ./pkg/grounding/ ./services/orchestrator/ ./services/executor/ ./pkg/guard/postgres/ ./pkg/guard/duckdb/ ./pkg/guard/sqlite/

## schemas: regenerate contracts/schema/*.json from the Go types.
schemas:
	$(GO) test ./contracts/ -run TestSchemas -update

clean:
	rm -rf bin .sonde-demo
