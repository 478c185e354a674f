# The two commands a newcomer needs:
#   go run ./cmd/redlock demo    (or: make demo)
#   make test
GO ?= go

.PHONY: test unit integration demo redis-image bench chaos chaos-unsafe model lint

## test: unit tests with the race detector, then the integration suite on five Redis nodes.
test: unit integration

unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

integration:
	$(MAKE) -C integration test

demo:
	$(GO) run ./cmd/redlock demo

## redis-image: build the local Redis image from the Debian redis-server package (no registry needed).
redis-image:
	$(MAKE) -C integration redis-image

bench chaos chaos-unsafe:
	$(MAKE) -C integration $@
