package redlockotel

import (
	"errors"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// Option configures an Observer.
type Option func(*config)

type config struct {
	meters  metric.MeterProvider
	tracers trace.TracerProvider
	err     error
}

func newConfig(opts []Option) (config, error) {
	c := config{meters: otel.GetMeterProvider(), tracers: otel.GetTracerProvider()}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c, c.err
}

// WithMeterProvider sets where the metrics go. The default is the global
// provider, otel.GetMeterProvider(), as it is when New is called.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) {
		if mp == nil {
			c.fail(errors.New("redlockotel: nil meter provider"))
			return
		}
		c.meters = mp
	}
}

// WithTracerProvider sets where the spans go. The default is the global
// provider, otel.GetTracerProvider(), as it is when New is called.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(c *config) {
		if tp == nil {
			c.fail(errors.New("redlockotel: nil tracer provider"))
			return
		}
		c.tracers = tp
	}
}

func (c *config) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}
