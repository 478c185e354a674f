package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// durations is a set of measured times.
type durations []time.Duration

// sorted returns a sorted copy.
func (d durations) sorted() durations {
	s := slices.Clone(d)
	slices.Sort(s)
	return s
}

// quantile returns the q-quantile (0 < q <= 1) by the nearest-rank method:
// the smallest value with at least q of the values at or below it. It
// returns -1 for no values.
func (d durations) quantile(q float64) time.Duration {
	if len(d) == 0 {
		return -1
	}
	s := d.sorted()
	rank := int(math.Ceil(q * float64(len(s))))
	return s[min(max(rank, 1), len(s))-1]
}

// max returns the largest value, or -1 for no values.
func (d durations) max() time.Duration {
	if len(d) == 0 {
		return -1
	}
	return slices.Max(d)
}

// fmtDur prints a duration in milliseconds with three significant digits,
// or "n/a" for a missing figure (negative).
func fmtDur(d time.Duration) string {
	if d < 0 {
		return "n/a"
	}
	return fmtFloat(float64(d)/float64(time.Millisecond)) + " ms"
}

// fmtFloat prints v with three significant digits, without exponent.
func fmtFloat(v float64) string {
	switch a := math.Abs(v); {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3g", v)
	}
}

// ratio returns a/b, or NaN when either is missing (negative) or b is 0.
func ratio(a, b float64) float64 {
	if a < 0 || b <= 0 {
		return math.NaN()
	}
	return a / b
}

// fmtRatio prints a ratio as "0.42x", or "n/a".
func fmtRatio(r float64) string {
	if math.IsNaN(r) {
		return "n/a"
	}
	return fmtFloat(r) + "x"
}
