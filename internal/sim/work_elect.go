package sim

import (
	"context"
	"fmt"
	"time"
)

// elect campaigns in an election: with Campaign, leading for a drawn time
// (or until the leadership is lost), proclaiming a new value one time in
// three, then resigning; or with Lead, whose function leads for a drawn
// time or until its context ends.
func (w *worker) elect() {
	e, ttl := w.r.elections[w.rng.IntN(len(w.r.elections))], w.ttl()
	value := fmt.Sprintf("c%d", w.c)
	hd := hold{kind: leader, keys: []string{e}}
	if w.rng.IntN(3) == 0 {
		w.do(hd, fmt.Sprintf("Lead ttl=%v", ttl), true, ttl, func(ctx context.Context, fn func(context.Context) error) error {
			return w.client.Lead(ctx, e, value, ttl, fn)
		})
		return
	}
	wait := w.wait()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	hd.client, hd.called = w.c, w.r.nw.now()
	w.r.h.call(w.c, e, "Campaign ttl=%v wait=%v", ttl, wait)
	ls, err := w.client.Campaign(ctx, e, value, ttl)
	if err != nil {
		w.returned(e, err)
		return
	}
	hd.from = w.r.nw.now()
	if w.r.fencing { // terms are fences: promised where every node persists
		hd.fence = ls.Term()
	}
	w.r.h.note(w.c, e, "< ok until=%s term=%d", w.at(ls.Until()), ls.Term())
	w.watch(e, ttl, w.timeout, ls.Done(), ls.Until, ls.Err)
	stop := hd.from + time.Duration(w.rng.Int64N(int64(3*ttl)))
	if w.rng.IntN(3) == 0 {
		w.sleepOrDone(hd.from+(stop-hd.from)/2, ls.Done())
		w.r.h.call(w.c, e, "Proclaim")
		err := ls.Proclaim(context.Background(), value+"'")
		w.returned(e, err)
	}
	w.held(hd, stop, ls.Done(), ls.Until, ls.Err)
	w.r.h.call(w.c, e, "Resign")
	err = ls.Resign(context.Background())
	w.returned(e, err)
}
