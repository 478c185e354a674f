package redlockotel_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/alicebob/miniredis/v2"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/redlockgo/redlock/pool"
	"github.com/redlockgo/redlock/redlock"
	"github.com/redlockgo/redlock/redlockotel"
)

func Example() {
	// In-memory exporters for the example; a program passes its own
	// providers, or none to use the global ones.
	reader := sdkmetric.NewManualReader()
	spans := tracetest.NewSpanRecorder()
	obs, err := redlockotel.New(
		redlockotel.WithMeterProvider(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))),
		redlockotel.WithTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))),
	)
	if err != nil {
		log.Fatal(err)
	}

	s := miniredis.NewMiniRedis() // one in-memory node, for the example
	if err := s.Start(); err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	p, err := pool.FromURL("redis://" + s.Addr())
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	c, err := redlock.New([]pool.Pool{p}, redlock.WithObserver(obs), redlock.WithNodeTimeout(time.Second))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	ctx := context.Background()
	err = c.Do(ctx, "report:daily", 10*time.Second, func(ctx context.Context) error {
		return nil // the work
	})
	if err != nil {
		log.Fatal(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		log.Fatal(err)
	}
	for _, m := range rm.ScopeMetrics[0].Metrics {
		fmt.Println(m.Name, m.Unit)
	}
	for _, s := range spans.Ended() {
		fmt.Println("span", s.Name())
	}
	// Output:
	// redlock.lock.acquisitions {acquisition}
	// redlock.lock.wait.duration s
	// redlock.lock.hold.duration s
	// span redlock.lock
	// span redlock.unlock
}
