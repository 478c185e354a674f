package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"slices"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Plot draws the distribution (CDF, log time axis) of every latency
// scenario and of the contention waits (healthy, and under faults next to
// the healthy 8 Clients), one panel each, into a PNG at path.
func (r *Results) Plot(path string) error {
	var panels []*plot.Plot
	for _, l := range r.Latency {
		curves := make([]curve, 0, len(implementations))
		for _, impl := range implementations {
			curves = append(curves, curve{name: impl, d: l.Series[impl].lat, style: styles[impl]})
		}
		p, err := cdfPanel("lock+unlock: "+l.Name, curves)
		if err != nil {
			return err
		}
		panels = append(panels, p)
	}
	addWaits := func(title string, names []string) error {
		p, err := r.waitPanel(title, names)
		if err == nil {
			panels = append(panels, p)
		}
		return err
	}
	if len(r.Contention) > 0 {
		if err := addWaits(fmt.Sprintf("wait, %d workers on one key", r.Config.Workers), r.Contention); err != nil {
			return err
		}
	}
	if len(r.Faulted) > 0 {
		title := fmt.Sprintf("wait, %d Clients on one key, one node faulty", r.Config.Workers)
		if err := addWaits(title, append([]string{oursMany}, r.Faulted...)); err != nil {
			return err
		}
	}
	const cols = 3
	rows := (len(panels) + cols - 1) / cols
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range panels {
		grid[i/cols][i%cols] = p
	}
	img := vgimg.New(cols*11*vg.Centimeter, vg.Length(rows)*9*vg.Centimeter)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Centimeter / 2, PadY: vg.Centimeter / 2,
		PadTop: vg.Centimeter / 4, PadBottom: vg.Centimeter / 4, PadLeft: vg.Centimeter / 4, PadRight: vg.Centimeter / 2}
	canvases := plot.Align(grid, tiles, dc)
	for i := range grid {
		for j, p := range grid[i] {
			if p != nil {
				p.Draw(canvases[i][j])
			}
		}
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// waitPanel draws the contention waits of the variants in names, each in
// the same style in every panel.
func (r *Results) waitPanel(title string, names []string) (*plot.Plot, error) {
	all := append(slices.Clone(r.Contention), r.Faulted...)
	curves := make([]curve, 0, len(names))
	for _, name := range names {
		c := r.Contended[name]
		if c == nil {
			continue
		}
		st, ok := styles[name]
		if !ok {
			st = contentionStyles[max(slices.Index(all, name), 0)%len(contentionStyles)]
		}
		curves = append(curves, curve{name: name, d: c.waits, style: st})
	}
	return cdfPanel(title, curves)
}

type lineStyle struct {
	color  color.Color
	dashes []vg.Length
}

var styles = map[string]lineStyle{
	Ours:    {color: color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}},
	Redsync: {color: color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}, dashes: []vg.Length{vg.Points(6), vg.Points(3)}},
	Floor:   {color: color.RGBA{R: 0x55, G: 0x55, B: 0x55, A: 0xff}, dashes: []vg.Length{vg.Points(2), vg.Points(2)}},
}

// contentionStyles colour this library's contention variants; redsync keeps
// its own style.
var contentionStyles = []lineStyle{
	{color: color.RGBA{R: 0x1f, G: 0x5f, B: 0xbf, A: 0xff}},
	{color: color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}},
	{color: color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}, dashes: []vg.Length{vg.Points(4), vg.Points(2)}},
	{color: color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}, dashes: []vg.Length{vg.Points(1), vg.Points(2)}},
	{color: color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}, dashes: []vg.Length{vg.Points(6), vg.Points(2), vg.Points(1), vg.Points(2)}},
	{color: color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}},
	{color: color.RGBA{R: 0xe3, G: 0x77, B: 0xc2, A: 0xff}, dashes: []vg.Length{vg.Points(3), vg.Points(3)}},
	{color: color.RGBA{R: 0xbc, G: 0xbd, B: 0x22, A: 0xff}, dashes: []vg.Length{vg.Points(8), vg.Points(3)}},
}

type curve struct {
	name  string
	d     durations
	style lineStyle
}

// minPlotted is where the log axis starts: shorter times are drawn there.
const minPlotted = time.Microsecond

// maxPoints bounds the points of one curve; beyond it the CDF is sampled at
// evenly spaced ranks, keeping the largest value.
const maxPoints = 400

func cdfPanel(title string, curves []curve) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "ms (log scale)"
	p.Y.Label.Text = "fraction of operations ≤ x"
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = 0, 1
	p.Add(plotter.NewGrid())
	// A CDF rises to the right: the bottom right corner is free.
	p.Legend.Top, p.Legend.Left = false, false
	p.Legend.XOffs, p.Legend.YOffs = -vg.Centimeter/2, vg.Centimeter/4
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, c := range curves {
		if len(c.d) == 0 {
			continue
		}
		s := c.d.sorted()
		lo = min(lo, float64(max(s[0], minPlotted))/float64(time.Millisecond))
		hi = max(hi, float64(s[len(s)-1])/float64(time.Millisecond))
	}
	if lo <= hi {
		// Whole decades, so that the log axis has labelled ticks.
		p.X.Min, p.X.Max = math.Pow(10, math.Floor(math.Log10(lo))), math.Pow(10, math.Ceil(math.Log10(hi)))
	} else {
		// No curve has a point: an empty panel, on an axis a log scale takes.
		p.Title.Text += " (no data)"
		p.X.Min, p.X.Max = 0.1, 1
	}
	for _, c := range curves {
		if len(c.d) == 0 {
			continue
		}
		line, err := plotter.NewLine(cdfPoints(c.d))
		if err != nil {
			return nil, fmt.Errorf("plot %s, %s: %w", title, c.name, err)
		}
		line.Color = c.style.color
		line.Dashes = c.style.dashes
		line.Width = vg.Points(1.5)
		p.Add(line)
		p.Legend.Add(fmt.Sprintf("%s (n=%d)", c.name, len(c.d)), line)
	}
	return p, nil
}

// cdfPoints returns the empirical CDF of d as steps, in milliseconds.
func cdfPoints(d durations) plotter.XYs {
	s := d.sorted()
	n := len(s)
	step := max(1, n/maxPoints)
	var pts plotter.XYs
	for i := 0; i < n; i += step {
		pts = appendStep(pts, s, i)
	}
	if (n-1)%step != 0 {
		pts = appendStep(pts, s, n-1)
	}
	return pts
}

func appendStep(pts plotter.XYs, s durations, i int) plotter.XYs {
	x := float64(max(s[i], minPlotted)) / float64(time.Millisecond)
	lo, hi := float64(i)/float64(len(s)), float64(i+1)/float64(len(s))
	return append(pts, plotter.XY{X: x, Y: lo}, plotter.XY{X: x, Y: hi})
}
