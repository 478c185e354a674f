# The two commands a newcomer needs:
#   go run ./cmd/redlock demo    (or: make demo)
#   make test
GO ?= go

.PHONY: test unit modules integration demo redis-image bench chaos chaos-unsafe model

# Modules of their own, so the library's go.mod stays lean.
MODULES := pool/rueidispool redlockotel

## test: unit and real-Redis tests with the race detector, the adapter and
## telemetry modules, then the integration suite on five Redis nodes.
## Without redis-server on the PATH the real-Redis tests fail with an install
## hint; REDLOCK_SKIP_REDIS=1 make test skips them instead (never in CI).
test: unit modules integration

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

modules:
	for m in $(MODULES); do (cd $$m && $(GO) vet ./... && $(GO) test -race -count=1 ./...) || exit 1; done

integration:
	$(MAKE) -C integration test

demo:
	$(GO) run ./cmd/redlock demo

## redis-image: build the local Redis image from the Debian redis-server package (no registry needed).
redis-image:
	$(MAKE) -C integration redis-image

## bench, chaos, chaos-unsafe: see integration/Makefile (CHAOS_DURATION,
## CHAOS_EXPECT_VIOLATIONS pass through).
bench chaos chaos-unsafe:
	$(MAKE) -C integration $@

## model: model-check the protocol with SPIN (docs/model.md); fails if a safe
## configuration reports an error or an unsafe one stops producing its
## counterexample.
include docs/model/Makefile.inc
