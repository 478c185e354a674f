# The two commands a newcomer needs:
#   go run ./cmd/redlock demo    (or: make demo)
#   make test                    (sets itself up: see deps below)
GO ?= go

.PHONY: test test-loaded deps unit modules integration demo redis-image bench chaos chaos-unsafe model sim sim-unsafe

# Modules of their own, so the library's go.mod stays lean.
MODULES := pool/rueidispool redlockotel

## test: unit and real-Redis tests with the race detector, the adapter and
## telemetry modules, then the integration suite on five Redis nodes.
## It needs only Go: deps installs the rest first, or names it.
## REDLOCK_SKIP_REDIS=1 make test skips the real-Redis tests where
## redis-server is missing (never in CI).
test: unit modules integration

## test-loaded: the core module's tests (make unit: go vet, then go test
## -race) beside CPU hogs on every core but one, at least
## one (scripts/loaded.sh; they end with the run, also on failure or ^C), to
## reproduce a test that flakes on a loaded machine. LOADED_TARGETS names
## other targets to run so: "unit integration", or test for everything.
## LOADED_HOGS sets the number of hogs. See docs/testing.md.
LOADED_TARGETS ?= unit
test-loaded: deps
	bash scripts/loaded.sh $(MAKE) --no-print-directory $(LOADED_TARGETS)

## deps: what the tests need beyond Go (scripts/deps.sh says what and why):
## installed with apt-get where it is usable (root, or passwordless sudo),
## else one line names the packages and the target stops; then the local
## Redis image when a Docker engine answers and REDLOCK_REDIS_IMAGE is unset.
## Every target that runs tests asks it first.
deps:
	@bash scripts/deps.sh install test

unit modules integration bench chaos chaos-unsafe: deps

## unit runs the longest packages first, three test binaries at a time:
## they wait on Redis more than they compute (the quick start's minute of
## quarantine uses no CPU), and at go test's default (-p 2, in package
## order) the redlock package began after two minutes. On two cores beside
## helpers' simulations: 216s at -p 2, 114s at -p 3 so ordered.
UNIT_FIRST := ./redlock/ ./examples/quickstart/ ./cmd/redlock/ ./pool/ ./internal/sim/ ./redlocktest/
unit:
	$(GO) vet ./...
	$(GO) test -race -count=1 -p 3 $(UNIT_FIRST) ./...

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

## sim: the deterministic simulation (internal/sim, docs/simulation.md): the
## real Client over in-process nodes, with a seeded network and faults, in
## virtual time; SIM_SEEDS seeds in SIM_PROCS processes, one summary line
## "sim: S seeds, O operations, F faults, V violations"; fails on a
## violation, after printing its seed, history, digest and replay command.
## SEED=n replays seed n alone and prints its whole history and digest;
## SIM_TWICE=1 runs every seed twice and fails if a history differs.
## sim-unsafe: the negative control, the restart quarantine off over
## nodes that never persist: passes only if it finds a violation within
## SIM_UNSAFE_SEEDS seeds. Neither needs Docker or redis-server.
SIM_SEEDS ?= 2000
SIM_PROCS ?= 2
SIM_UNSAFE_SEEDS ?= 300
SIM_ARGS_sim = -sim.seeds=$(SIM_SEEDS) -sim.procs=$(SIM_PROCS)
SIM_ARGS_sim-unsafe = -sim.unsafe -sim.seeds=$(SIM_UNSAFE_SEEDS)
sim sim-unsafe:
	@dir=$$(mktemp -d) && trap 'rm -rf "$$dir"' EXIT && \
	$(GO) test -c -o "$$dir/sim.test" ./internal/sim && \
	GOGC=$${GOGC:-400} "$$dir/sim.test" -test.run '^TestSim$$' -test.timeout=30m $(SIM_ARGS_$@) $(if $(SEED),-sim.seed=$(SEED)) $(if $(TRACE),-sim.trace) $(if $(SIM_TWICE),-sim.twice)

## model: model-check the protocol with SPIN (docs/model.md); fails if a safe
## configuration reports an error or an unsafe one stops producing its
## counterexample.
include docs/model/Makefile.inc
