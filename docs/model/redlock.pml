/*
 * Promela model of Redlock with two-phase fencing tokens.
 * docs/model.md gives the properties, what the configurations show and the
 * limits; docs/model/run.sh runs every configuration, each with a comment
 * that says what it checks.
 *
 * One file serves all configurations; switches are set with
 *   spin -a -DNAME=VALUE redlock.pml
 *
 * Time.  A global discrete clock ticks.  A node keeps the remaining lifetime
 * of its key in ticks of its own clock (krem).  A node clock may run fast
 * against the clients' clock by up to DRIFT_BOUND ticks over one key
 * lifetime.  A client measures elapsed time in global ticks and keeps the
 * remaining validity of its current attempt (vrem):
 *   validity = TTL - elapsed - DRIFT.
 * Remaining times instead of absolute ones keep the state space finite with
 * no time horizon; runs are bounded by the number of attempts (MAXATT),
 * extensions (MAXEXT) and crashes (MAXCRASH).
 *
 * Restart quarantine (QUAR > 0).  A node restarted without persistence
 * keeps the remaining quarantine (qrem), counted down by its uptime, which
 * runs on the node's clock and so may run fast like its keys.  While qrem > 0
 * the clients do not count the node's yes: it counts as a no, as the
 * library's ErrNodeQuarantined does, although the node did run the command.
 *
 * Restart ceiling (CEIL, issue 34).  Each node keeps a ceiling record: a
 * value at least the TTL of every lease it granted that may still be valid,
 * living at least as long as each such lease.  Every SET it grants and every
 * extension it runs raises it (value and lifetime to at least the lease's);
 * a crash without persistence wipes it.  A quarantined node R is let back
 * early once its horizon is known: a read of the ceilings of quorum(N) of the
 * other nodes, each up and counting at the read, after R's restart; H = the
 * largest value read; R counts once its uptime (on its own, possibly fast,
 * clock) reaches H + DRIFT.  Read at any moment after the restart, as issue
 * 34 puts it, this is unsafe: an acquisition in flight across the restart
 * can complete after the read with R's forgotten yes.  The rule that checks
 * safe adds a decision window: every acquisition and extension is decided
 * within its client's window of its start, A's WIN ticks and B's WIN1 (at
 * most WIN: WIN is the longest window any client may use, the library's
 * NodeTimeoutLimit), and a read counts only from HZDELAY = WIN + DRIFT ticks
 * of R's uptime on, whichever client reads (issue 58: not the reader's own
 * window).  Every lease in the model has the same TTL, so a live ceiling's
 * value is TTL and only its lifetime (crem) is kept.
 *
 * Processes.  Clock; one Link per (client, node) pair, which delivers that
 * client's requests to that node (the node's command runs atomically on
 * delivery); one Client per client; Crash.  A client's phase lives in
 * globals, and the reply that completes a majority (or makes it impossible)
 * also runs the client's decision in the same atomic step.  A client that
 * acts on it later is the same as one whose next messages are delayed, and the
 * validity it checks only shrinks with time.
 *
 * printf lines narrate a replayed trail (spin -t); the verifier ignores them.
 */

/* ---------------------------------------------------------------- switches */
#ifndef N
#define N 3                 /* Redis nodes: 3 (5 without SYMM) */
#endif
#define C 2                 /* clients, called A (0) and B (1) */
#define MAJ (N/2+1)
#ifndef TTL
#define TTL 3               /* lock TTL, in ticks */
#endif
#ifndef DRIFT
#define DRIFT 1             /* drift allowance the client subtracts */
#endif
#ifndef DRIFT_BOUND
#define DRIFT_BOUND 1       /* actual node-vs-client drift over one key lifetime */
#endif
#ifndef MAXATT
#define MAXATT 1            /* acquisition attempts of client A */
#endif
#ifndef MAXATT1
#define MAXATT1 1           /* acquisition attempts of client B */
#endif
#ifndef MAXEXT
#define MAXEXT 0            /* extensions by client A */
#endif
#ifndef MAXEXT1
#define MAXEXT1 MAXEXT      /* extensions by client B */
#endif
#ifndef MAXCRASH
#define MAXCRASH 0          /* node crashes in a run */
#endif
#ifndef ROLLING
#define ROLLING 0           /* a node crashes only while none is quarantined */
#endif
#ifndef PERSIST
#define PERSIST 1           /* AOF appendfsync always: key and counter survive a crash */
#endif
#ifndef DELAY
#define DELAY 0             /* a crashed node stays down longer than the TTL */
#endif
#ifndef QUAR
#define QUAR 0              /* restart quarantine, in ticks of the node's uptime; 0: off */
#endif
#ifndef CEIL
#define CEIL 0              /* restart ceiling (issue 34), on top of QUAR */
#endif
#ifndef CEIL_MINORITY
#define CEIL_MINORITY 0     /* broken: the horizon is read from one other node */
#endif
#ifndef CEIL_NORAISE
#define CEIL_NORAISE 0      /* broken: 1 a granted SET, 2 an extension, does not raise the ceiling */
#endif
#ifndef WIN
#define WIN 0               /* decision window, ticks: an acquisition or extension is
                             * decided within WIN ticks of its start; 0: no window.
                             * The longest any client may use; A uses it */
#endif
#ifndef WIN1
#define WIN1 WIN            /* B's decision window, at most WIN */
#endif
#ifndef SETTLE_OWN
#define SETTLE_OWN 0        /* broken: a read waits for the reader's own window (B's, WIN1),
                             * not the longest any client may use (issue 58) */
#endif
#ifndef HZDELAY             /* CEIL: uptime a restarted node needs before a horizon read */
#if WIN && SETTLE_OWN
#define HZDELAY (WIN1 + DRIFT)
#elif WIN
#define HZDELAY (WIN + DRIFT)
#else
#define HZDELAY 0
#endif
#endif
#ifndef PROBE
#define PROBE 0             /* CEIL, one-off vacuity check: an acquisition counts the yes of
                             * a node that the quarantine alone would still exclude (2: of
                             * the second node to crash, while the first one, let back
                             * early itself, is still inside its full quarantine) */
#endif
#ifndef PRUNE
#define PRUNE 0             /* stop a run once a client can never hold again (see GO) */
#endif
#ifndef LOSS
#define LOSS 1              /* replies may be lost (lost requests: see Link) */
#endif
#ifndef FENCE
#define FENCE 1             /* 0 none, 1 two-phase read-max/write-back, 2 naive max of INCR */
#endif
#ifndef LIVE
#define LIVE 0              /* liveness configuration */
#endif
#ifndef GENCTR
#define GENCTR 0            /* start from arbitrary counters (see init) */
#endif
/* ablations of the two-phase scheme (docs/model.md, "Which guards matter") */
#ifndef WB_TOKEN_CHECK
#define WB_TOKEN_CHECK 1    /* write back only where the key holds our token */
#endif
#ifndef WB_VALIDITY_CHECK
#define WB_VALIDITY_CHECK 1 /* hand t out only within validity */
#endif

#if CEIL && (QUAR == 0 || PERSIST || MAXCRASH == 0)
#error "CEIL shortens the quarantine of a node restarted without persistence: it needs MAXCRASH > 0, PERSIST=0 and QUAR > 0"
#endif
#if PROBE && defined(SYMM)
#error "PROBE: no SYMM (qfull is not sorted with the nodes)"
#endif
#if WIN1 > WIN || (WIN && WIN1 == 0)
#error "WIN1, B's decision window, must be at least 1 and at most WIN, the longest any client may use"
#endif
#if CEIL_MINORITY
#define QREAD 1             /* other nodes whose ceilings a horizon needs */
#else
#define QREAD MAJ           /* quorum(N) of the N-1 others */
#endif

#if LIVE
#undef MAXCRASH
#define MAXCRASH 0
#undef LOSS
#define LOSS 0
#undef FENCE
#define FENCE 0
#undef MAXEXT
#define MAXEXT 0
#undef MAXEXT1
#define MAXEXT1 0
#endif

/* ------------------------------------------------------------------- nodes */
bool up[N];                 /* node is running */
byte key[N];                /* token stored under the lock key, 0 = absent */
byte krem[N];               /* remaining key lifetime, in ticks */
byte ctr[N];                /* fencing counter of the key (no TTL) */
byte crashes;               /* crashes so far */
byte downs;                 /* nodes down now */
byte dtime;                 /* DELAY: ticks since the crash, saturating at TTL+1 */
byte qrem[N];               /* QUAR: ticks of quarantine left; 0: the node counts */
#if PROBE
byte qfull[N];              /* PROBE: the quarantine left without the ceiling rule */
byte firstc, lastc;         /* PROBE: the nodes that crashed first and last */
#endif
byte hup[N];                /* CEIL: uptime of a quarantined node, ticks of its clock; 0 once
                             * it counts */
byte crem[N];               /* CEIL: remaining lifetime of the node's ceiling record, global
                             * ticks; 0: none (value 0), else its value is TTL */

/* ---------------------------------------------------------------- messages
 * One slot per kind and (client, node), index c*N+n.  A request holds the
 * token of the attempt that sent it.  A new request in a slot replaces an
 * undelivered older one, which is then lost. */
byte sq[C*N];               /* SET key tok NX PX ttl (phase 1) */
byte fq[C*N];               /* fence write-back: token ... */
byte ft[C*N];               /* ... and the value t */
byte eq[C*N];               /* compare-and-pexpire */
byte dq[C*N];               /* compare-and-delete */
byte rp[C*N];               /* replies to the current phase: 0 none, 1 no, 2 yes */

/* ----------------------------------------------------------------- clients */
#define IDLE 0              /* not holding, not acquiring */
#define P1   1              /* waiting for SET replies */
#define P2   2              /* waiting for fence write-back replies */
#define HOLD 3              /* acquired: believes it holds while vrem > 0 */
#define EXT  4              /* holding, waiting for extend replies */
byte ph[C];                 /* phase */
byte ctok[C];               /* token of the current attempt */
byte vrem[C];               /* remaining validity, global ticks */
byte evr[C];                /* validity an extension in flight would give */
byte ct[C];                 /* fencing: max counter read so far, then t */
byte lastFence;             /* last fencing token handed out */
bool freed;                 /* LIVE: a release happened, no success since */

byte k;                     /* loop index, used only inside atomic steps, left 0 */

#define INROUND(x) (ph[x] == P1 || ph[x] == P2)
#define HELD(x)    (ph[x] == HOLD || ph[x] == EXT)
#define HOLDS(x)   (HELD(x) && vrem[x] > 0)
#define NAME(x)    (65 + (x))          /* 'A' or 'B', for printf %c */

/* PRUNE: with one attempt per client, a client that has failed, released,
 * or let its validity run out (DONE) will never hold again.  Mutual exclusion
 * is asserted when a client starts to hold, and fails only if the other one
 * holds then too, so no violation is reachable once either client is done.
 * The run stops there: every step of every process is guarded by GO. */
#define DONE(x)    ((ph[x] == IDLE && ctok[x] != 0) || (HELD(x) && vrem[x] == 0))
#if PRUNE
#if MAXATT != 1 || MAXATT1 != 1 || FENCE != 0 || LIVE
#error "PRUNE needs one attempt per client, FENCE=0 and no LIVE"
#endif
#define GO         (!(DONE(0) || DONE(1)))
#else
#define GO         1
#endif

#if N == 3
#define COUNT(arr, x, v) ((arr[(x)*N+0] == v) + (arr[(x)*N+1] == v) + (arr[(x)*N+2] == v))
#elif N == 5
#define COUNT(arr, x, v) ((arr[(x)*N+0] == v) + (arr[(x)*N+1] == v) + (arr[(x)*N+2] == v) \
                        + (arr[(x)*N+3] == v) + (arr[(x)*N+4] == v))
#endif
/* WIN > 0: an acquisition or an extension of client x is decided within
 * its window (A's WIN, B's WIN1) of its start, or not at all (it has timed
 * out); v is the validity it would give, which started at TTL - DRIFT and
 * loses a tick per tick. */
#if WIN
#define INWIN(x, v) ((v) > TTL - DRIFT - ((x) == 0 -> WIN : WIN1))
#else
#define INWIN(x, v) 1
#endif
/* CEIL: a horizon read counts only once the restarted node's uptime (on its
 * own clock) is HZDELAY or more. */
#define HZLATE(n)  (hup[n] >= HZDELAY)
/* node n is restarted, quarantined, and may have its horizon read */
#define HZOK(n)    (up[n] && qrem[n] > 0 && HZLATE(n))
#if N == 3
#define HZANY      (HZOK(0) || HZOK(1) || HZOK(2))
#define HZNONE     (qrem[0] == 0 && qrem[1] == 0 && qrem[2] == 0)
#elif N == 5
#define HZANY      (HZOK(0) || HZOK(1) || HZOK(2) || HZOK(3) || HZOK(4))
#define HZNONE     (qrem[0] == 0 && qrem[1] == 0 && qrem[2] == 0 && qrem[3] == 0 && qrem[4] == 0)
#endif
#define YES(x) COUNT(rp, x, 2)
#define NO(x)  COUNT(rp, x, 1)

/* ----------------------------------------------------- client-side actions
 * These run inside an atomic step: of a Client, or of a Link delivering the
 * reply that completes a majority. */
inline clearReplies(x) {
  for (k : 0 .. N-1) { rp[(x)*N+k] = 0 }; k = 0
}

inline releaseAll(x) {      /* compare-and-delete on ALL nodes */
  for (k : 0 .. N-1) { dq[(x)*N+k] = ctok[x] }; k = 0
}

inline fail(x) {            /* failed acquisition: clean up everywhere */
  printf("%c: attempt with token %d failed; DEL to all nodes\n", NAME(x), ctok[x]);
  releaseAll(x); clearReplies(x);
  ph[x] = IDLE; vrem[x] = 0; ct[x] = 0
}

inline success(x) {
#if PROBE
  /* a yes from node k, granted since its restart (the crash wiped any older
   * key of this token), that the quarantine alone would not count yet */
  for (k : 0 .. N-1) {
    assert(!(rp[(x)*N+k] == 2 && qfull[k] > 0 && key[k] == ctok[x]
             && (PROBE == 1 || (crashes == 2 && k == lastc && k != firstc && qfull[firstc] > 0))))
  };
  k = 0;
#endif
  ph[x] = HOLD; clearReplies(x);
#if FENCE != 0
  printf("%c: ACQUIRED with token %d, validity left %d tick(s), fence %d (last handed out %d)\n",
         NAME(x), ctok[x], vrem[x], ct[x], lastFence);
#else
  printf("%c: ACQUIRED with token %d, validity left %d tick(s)\n", NAME(x), ctok[x], vrem[x]);
#endif
  assert(!(HOLDS(x) && HOLDS(1-x)));    /* property 1: mutual exclusion */
#if FENCE != 0
  assert(ct[x] > lastFence);            /* property 2: fences increase */
  lastFence = ct[x];
#endif
#if LIVE
  freed = 0;
#endif
  ct[x] = 0
}

/* phase 1 outcome: a majority granted, or a majority refused */
inline decide1(x) {
  if
  :: YES(x) >= MAJ && vrem[x] > 0 && INWIN(x, vrem[x]) ->
#if FENCE == 1
     /* t = max over the granting quorum + 1; write it back on that quorum */
     ct[x]++;
     printf("%c: majority granted; t = max counter + 1 = %d; write-back to the quorum\n",
            NAME(x), ct[x]);
     for (k : 0 .. N-1) {
       if
       :: rp[(x)*N+k] == 2 -> fq[(x)*N+k] = ctok[x]; ft[(x)*N+k] = ct[x]
       :: else
       fi;
       rp[(x)*N+k] = 0
     };
     k = 0;
     ph[x] = P2
#else
     success(x)
#endif
  :: YES(x) >= MAJ && !(vrem[x] > 0 && INWIN(x, vrem[x])) -> fail(x)   /* validity used up, or too late */
  :: NO(x) > N - MAJ -> fail(x)
  :: else
  fi
}

/* phase 2 outcome: t is handed out only once a majority wrote it back,
 * within validity */
inline decide2(x) {
  if
  :: YES(x) >= MAJ && (vrem[x] > 0 || !WB_VALIDITY_CHECK) -> success(x)
  :: YES(x) >= MAJ && vrem[x] == 0 && WB_VALIDITY_CHECK -> fail(x)
  :: NO(x) > N - MAJ -> fail(x)
  :: else
  fi
}

/* extension outcome: only at a majority and before the old validity ends */
inline decideExt(x) {
  if
  :: YES(x) >= MAJ ->
     if
     :: vrem[x] > 0 && INWIN(x, evr[x]) ->
        vrem[x] = evr[x];
        printf("%c: EXTENDED, validity left %d tick(s)\n", NAME(x), vrem[x]);
        assert(!(HOLDS(x) && HOLDS(1-x)))
     :: else -> printf("%c: extension came too late\n", NAME(x))
     fi;
     ph[x] = HOLD; evr[x] = 0; clearReplies(x)
  :: NO(x) > N - MAJ ->
     printf("%c: extension refused\n", NAME(x));
     ph[x] = HOLD; evr[x] = 0; clearReplies(x)
  :: else
  fi
}

/* ------------------------------------------------------- node-side commands
 * A new key lifetime is TTL ticks of the node's clock.  The node clock may
 * run fast by up to DRIFT_BOUND ticks over the lifetime, which only changes
 * how many global ticks the key lives, so the fast ticks are chosen up front:
 * the key lives TTL - d global ticks, 0 <= d <= DRIFT_BOUND. */
inline lifetime(n) {
  krem[n] = TTL;
  do
  :: krem[n] > TTL - DRIFT_BOUND && krem[n] > 0 -> krem[n]--
  :: break
  od;
  if :: krem[n] == 0 -> key[n] = 0 :: else fi
}

/* A restarted node's quarantine: QUAR ticks of its uptime.  Its clock may
 * run fast like a key's (see lifetime), so up to DRIFT_BOUND of them may pass
 * early; they are chosen at the restart. */
inline quarantine(n) {
  qrem[n] = QUAR;
  do
  :: qrem[n] > QUAR - DRIFT_BOUND && qrem[n] > 0 -> qrem[n]--
  :: break
  od
}

/* CEIL: a lease was just granted or extended on node n for krem[n] global
 * ticks; the ceiling record, raised with the same TTL on the same clock at
 * the same instant, lives at least as long: lifetime := max(lifetime, ttl).
 * (Its value, max(value, TTL), is TTL.) */
inline raise(n) {
  if :: crem[n] < krem[n] -> crem[n] = krem[n] :: else fi
}

/* CEIL: the horizon of node r, a quarantined node restarted without
 * persistence (the caller checks that r's uptime is HZDELAY or more): some
 * client reads the ceilings of QREAD of the other nodes, each up and
 * counting (not quarantined) now, and H is the largest value read.  r then
 * counts once its uptime reaches H + DRIFT: the quarantine left becomes
 * H + DRIFT - uptime, or 0, if that is shorter.  Which counting
 * nodes are read is chosen freely; a read of fewer than QREAD leaves r as it
 * is.  The nodes are read in one step; reading them one by one changes
 * nothing, since r counts only after the last read, and a lease valid then
 * was valid at every read. */
inline horizon(r) {
  for (k : 0 .. N-1) {
    if
    :: k != r && up[k] && qrem[k] == 0 ->
       if
       :: hc++; if :: crem[k] > 0 -> hh = TTL :: else fi
       :: skip                        /* not read */
       fi
    :: else
    fi
  };
  k = 0;
  if
  :: hc >= QREAD ->
     if
     :: hup[r] >= hh + DRIFT -> qrem[r] = 0; hup[r] = 0
     :: hup[r] < hh + DRIFT && hh + DRIFT - hup[r] < qrem[r] -> qrem[r] = hh + DRIFT - hup[r]
     :: else                                        /* no shorter than what is left */
     fi;
     printf("node %d: horizon %d read from %d other node(s): quarantine left %d tick(s)\n",
            r, hh, hc, qrem[r])
  :: else
  fi;
  hc = 0; hh = 0
}

/* The client's view of a node's yes: a quarantined node's yes is a no. */
inline vote(n) {
  if
  :: r == 2 && qrem[n] > 0 ->
     printf("node %d: quarantined (%d tick(s) left): its yes counts as a no\n", n, qrem[n]);
     r = 1
  :: else
  fi
}

/* Node commands set the reply r: 0 none (node down), 1 no, 2 yes. */
inline doSet(c, n) {
  if
  :: up[n] ->
     if
     :: key[n] == 0 ->
        key[n] = sq[c*N+n]; lifetime(n);
#if CEIL && CEIL_NORAISE != 1
        raise(n);
#endif
#if FENCE == 2
        ctr[n]++;                 /* naive: INCR in the same script */
#endif
        printf("node %d: SET token %d granted (counter %d), key expires in %d tick(s)\n",
               n, sq[c*N+n], ctr[n], krem[n]);
        r = 2
     :: else ->
        printf("node %d: SET token %d refused (held by %d)\n", n, sq[c*N+n], key[n]);
        r = 1
     fi
  :: else -> printf("node %d: down, SET token %d lost\n", n, sq[c*N+n])
  fi
}

inline doFence(c, n) {
  if
  :: up[n] ->
     if
     :: key[n] == fq[c*N+n] || !WB_TOKEN_CHECK ->   /* only where the key still holds our token */
        if :: ctr[n] < ft[c*N+n] -> ctr[n] = ft[c*N+n] :: else fi;
        printf("node %d: write-back by token %d: counter = %d\n", n, fq[c*N+n], ctr[n]);
        r = 2
     :: else ->
        printf("node %d: write-back by token %d refused\n", n, fq[c*N+n]);
        r = 1
     fi
  :: else
  fi
}

inline doExtend(c, n) {
  if
  :: up[n] ->
     if
     :: key[n] == eq[c*N+n] ->    /* compare-and-pexpire; never re-creates */
        lifetime(n);
#if CEIL && CEIL_NORAISE != 2
        raise(n);
#endif
        printf("node %d: PEXPIRE by token %d, key expires in %d tick(s)\n", n, eq[c*N+n], krem[n]);
        r = 2
     :: else -> r = 1
     fi
  :: else
  fi
}

inline doDel(c, n) {
  if
  :: up[n] && key[n] == dq[c*N+n] ->
     printf("node %d: DEL by token %d\n", n, dq[c*N+n]);
     key[n] = 0; krem[n] = 0
  :: else
  fi;
  dq[c*N+n] = 0
}

/* CEIL: a ceiling that will never be read again is cleared, so that states
 * that differ only in it merge; this changes nothing that can be observed.
 * Once every crash has happened and no node is down, only the horizon of a
 * node quarantined now can still be read, and only from counting nodes.
 * With one crash, or with ROLLING (a node crashes only while none is
 * quarantined), at most one node is quarantined then, and no read will ever
 * include it: its ceiling is dead, and all are once none is quarantined. */
#if CEIL && (MAXCRASH == 1 || ROLLING)
#define CEILGC \
  if \
  :: crashes == MAXCRASH && downs == 0 -> \
     for (k : 0 .. N-1) { if :: qrem[k] > 0 || HZNONE -> crem[k] = 0 :: else fi }; k = 0 \
  :: else \
  fi
#else
#define CEILGC skip
#endif

/* ----------------------------------------------------- symmetry reduction
 * With -DSYMM every atomic step ends by sorting the nodes into a canonical
 * order (all node-indexed data moves together; every Link is at its loop head
 * between steps, so swapping two nodes' data is the same as swapping their
 * Links).  Nodes are interchangeable and no property names a node, so a
 * violation is reachable iff one is reachable in the sorted state space.
 * Used for the safe runs only, so that counterexample trails keep stable node
 * numbers. */
#if defined(SYMM) && N == 3
c_code {
  /* compare all the data of nodes i and j, lexicographically */
  static int node_cmp(int i, int j) {
    uchar a[21], b[21]; int x;
    a[0] = now.up[i];  b[0] = now.up[j];
    a[1] = now.key[i]; b[1] = now.key[j];
    a[2] = now.krem[i]; b[2] = now.krem[j];
    a[3] = now.ctr[i]; b[3] = now.ctr[j];
    for (x = 0; x < 2; x++) {
      a[4+7*x] = now.sq[x*3+i]; b[4+7*x] = now.sq[x*3+j];
      a[5+7*x] = now.fq[x*3+i]; b[5+7*x] = now.fq[x*3+j];
      a[6+7*x] = now.ft[x*3+i]; b[6+7*x] = now.ft[x*3+j];
      a[7+7*x] = now.eq[x*3+i]; b[7+7*x] = now.eq[x*3+j];
      a[8+7*x] = now.dq[x*3+i]; b[8+7*x] = now.dq[x*3+j];
      a[9+7*x] = now.rp[x*3+i]; b[9+7*x] = now.rp[x*3+j];
      a[10+7*x] = 0; b[10+7*x] = 0;
    }
    a[18] = now.qrem[i]; b[18] = now.qrem[j];
    a[19] = now.crem[i]; b[19] = now.crem[j];
    a[20] = now.hup[i]; b[20] = now.hup[j];
    return memcmp(a, b, 21);
  }
#define SW(f, i, j) { uchar t_ = now.f[i]; now.f[i] = now.f[j]; now.f[j] = t_; }
  static void node_swap(int i, int j) {
    int x;
    SW(up, i, j); SW(key, i, j); SW(krem, i, j); SW(ctr, i, j); SW(qrem, i, j); SW(crem, i, j); SW(hup, i, j);
    for (x = 0; x < 2; x++) {
      SW(sq, x*3+i, x*3+j); SW(fq, x*3+i, x*3+j); SW(ft, x*3+i, x*3+j);
      SW(eq, x*3+i, x*3+j); SW(dq, x*3+i, x*3+j); SW(rp, x*3+i, x*3+j);
    }
  }
  static void canon(void) {
    if (node_cmp(0, 1) > 0) node_swap(0, 1);
    if (node_cmp(1, 2) > 0) node_swap(1, 2);
    if (node_cmp(0, 1) > 0) node_swap(0, 1);
  }
}
#define CANON CEILGC; c_code { canon(); }
#else
#define CANON CEILGC
#endif

/* ------------------------------------------------------------------- links */
/* a reply counts only if the client still waits for this phase of this
 * attempt */
#define WANTS(c, n, phase, tok) (ph[c] == phase && ctok[c] == tok && rp[(c)*N+n] == 0)

proctype Link(byte c; byte n) {
  byte r = 0;                     /* reply of the command being delivered */
end:
  do
  :: atomic {
       GO && sq[c*N+n] != 0 -> doSet(c, n);
#if LOSS && FENCE != 0
       /* The reply may be lost.  Without fencing, a lost reply is the same
        * to the client as a timeout before it arrived; with fencing the reply
        * carries a counter, so it is modelled explicitly. */
       if
       :: skip
       :: r != 0 -> printf("node %d: reply to token %d lost\n", n, sq[c*N+n]); r = 0
       fi;
#endif
       vote(n);
       if
       :: r != 0 && WANTS(c, n, P1, sq[c*N+n]) ->
          rp[c*N+n] = r;
          if :: r == 2 && ct[c] < ctr[n] -> ct[c] = ctr[n] :: else fi;   /* the reply carries the counter */
          decide1(c)
       :: else
       fi;
       r = 0; sq[c*N+n] = 0; CANON
     }
  :: atomic {
       GO && fq[c*N+n] != 0 -> doFence(c, n); vote(n);
       if :: r != 0 && WANTS(c, n, P2, fq[c*N+n]) -> rp[c*N+n] = r; decide2(c) :: else fi;
       r = 0; fq[c*N+n] = 0; ft[c*N+n] = 0; CANON
     }
  :: atomic {
       GO && eq[c*N+n] != 0 -> doExtend(c, n); vote(n);
       if :: r != 0 && WANTS(c, n, EXT, eq[c*N+n]) -> rp[c*N+n] = r; decideExt(c) :: else fi;
       r = 0; eq[c*N+n] = 0; CANON
     }
#if LIVE
  /* liveness: one FIFO connection per link; a DEL does not overtake a SET */
  :: atomic { dq[c*N+n] != 0 && sq[c*N+n] == 0 -> doDel(c, n); CANON }
#else
  :: atomic { GO && dq[c*N+n] != 0 -> doDel(c, n); CANON }
#endif
  od
  /* A lost request is one that is never delivered: a Link may leave it in its
   * slot for ever, until a newer request of the same kind replaces it. */
}

/* ---------------------------------------------------- node crash / restart */
#if ROLLING && N == 3
#define ROLLOK (qrem[0] == 0 && qrem[1] == 0 && qrem[2] == 0)
#else
#define ROLLOK 1
#endif
#if MAXCRASH > 0
active proctype Crash() {
  byte n;
  byte hc, hh;                  /* CEIL: ceilings read, largest value read */
end:
  do
  :: atomic {
       GO && crashes < MAXCRASH && downs == 0 && ROLLOK ->   /* one node down at a time */
       select(n : 0 .. N-1);
       up[n] = 0; crashes++; downs++; dtime = 0;
#if PROBE
       if :: crashes == 1 -> firstc = n :: else fi; lastc = n;
#endif
#if !PERSIST
       key[n] = 0; krem[n] = 0; ctr[n] = 0; crem[n] = 0;   /* memory only: all is lost */
#if CEIL
       printf("node %d: CRASH, key, counter and ceiling lost\n", n);
#else
       printf("node %d: CRASH, key and counter lost\n", n);
#endif
#else
       printf("node %d: CRASH (AOF keeps key and counter)\n", n);
#endif
       n = 0; CANON
     }
  :: atomic {
       GO && downs > 0 && (!DELAY || dtime > TTL) ->
       printf("nodes restart\n");
#if !PERSIST && QUAR > 0
       for (k : 0 .. N-1) {
         if
         :: !up[k] -> quarantine(k); printf("node %d: quarantined for %d tick(s)\n", k, qrem[k]);
#if CEIL
            hup[k] = QUAR - qrem[k];           /* the fast ticks of its clock */
#endif
#if PROBE
            qfull[k] = qrem[k];
#endif
            skip
         :: else
         fi
       };
#endif
       for (k : 0 .. N-1) { up[k] = 1 }; k = 0; downs = 0; dtime = 0; CANON
     }
#if CEIL
  /* a horizon read, at any moment after the restart of a quarantined node */
  :: atomic {
       GO && HZANY ->
       select(n : 0 .. N-1);
       if :: HZOK(n) -> horizon(n) :: else fi;
       n = 0; CANON
     }
#endif
  od
}
#endif

/* -------------------------------------------------------------- the clock
 * Keys expire in node time.  A down node's clock keeps running, and Redis
 * stores absolute expiry times, so an AOF-restored key whose time has passed
 * is gone after the restart. */
inline tick() {
  printf("---- tick ----\n");
  for (k : 0 .. N-1) {
    if
    :: key[k] != 0 ->
       krem[k]--;
       if :: krem[k] == 0 -> key[k] = 0; printf("node %d: key expired\n", k) :: else fi
    :: else
    fi
  };
  for (k : 0 .. C-1) {
    if :: vrem[k] > 0 -> vrem[k]-- :: else fi;
    if :: evr[k] > 0 -> evr[k]-- :: else fi
  };
  k = 0;
#if DELAY
  if :: downs > 0 && dtime <= TTL -> dtime++ :: else fi;
#endif
#if QUAR > 0 && CEIL
  for (k : 0 .. N-1) {
    if :: qrem[k] > 1 -> qrem[k]--; hup[k]++ :: qrem[k] == 1 -> qrem[k] = 0; hup[k] = 0 :: else fi
  };
  k = 0;
#elif QUAR > 0
  for (k : 0 .. N-1) { if :: qrem[k] > 0 -> qrem[k]-- :: else fi }; k = 0;
#endif
#if CEIL
  for (k : 0 .. N-1) { if :: crem[k] > 0 -> crem[k]-- :: else fi }; k = 0;
#endif
#if PROBE
  for (k : 0 .. N-1) { if :: qfull[k] > 0 -> qfull[k]-- :: else fi }; k = 0;
#endif
  skip
}

active proctype Clock() {
end:
  do
  :: atomic {
#if LIVE
       /* synchrony assumption of the liveness check: a round takes less
        * than a tick */
       !INROUND(0) && !INROUND(1) ->
#endif
       GO -> tick(); CANON
     }
  od
}

/* ------------------------------------------------------------------ client */
inline start(x) {
  clearReplies(x);
  vrem[x] = TTL - DRIFT;          /* the validity clock starts before sending */
  printf("%c: new attempt, token %d: SET NX PX to all nodes (validity %d tick(s))\n", NAME(x), ctok[x], vrem[x]);
  for (k : 0 .. N-1) { sq[(x)*N+k] = ctok[x] }; k = 0;
  ph[x] = P1
}

#if !LIVE
proctype Client(byte c) {
  byte a = 0;                     /* attempts so far */
  byte ne = 0;                    /* extensions so far */
end:
  do
  :: atomic { GO && ph[c] == IDLE && a < (c == 0 -> MAXATT : MAXATT1) ->
       a++; ctok[c] = c*MAXATT + a;   /* unique per attempt */
       start(c); CANON }
  /* per-node timeouts: the client may stop waiting at any time */
  :: atomic { GO && INROUND(c) -> printf("%c: timeout\n", NAME(c)); fail(c); CANON }
  :: atomic { GO && ph[c] == HOLD && ne < (c == 0 -> MAXEXT : MAXEXT1) && vrem[c] > 0 ->
       ne++; clearReplies(c); evr[c] = TTL - DRIFT;
       printf("%c: extend: PEXPIRE to all nodes\n", NAME(c));
       for (k : 0 .. N-1) { eq[c*N+k] = ctok[c] }; k = 0;
       ph[c] = EXT; CANON }
  :: atomic { GO && ph[c] == EXT -> printf("%c: extension timed out\n", NAME(c));
       ph[c] = HOLD; evr[c] = 0; clearReplies(c); CANON }
  /* release at any time, whether or not the validity has run out */
  :: atomic { GO && ph[c] == HOLD -> printf("%c: release: DEL to all nodes\n", NAME(c));
       releaseAll(c); vrem[c] = 0; ph[c] = IDLE; CANON }
  od
}
#else
/* Liveness: clients retry for ever, with one token each; no timeouts (a round
 * waits for its replies).  Rounds take less than a tick and time passes
 * between rounds: a new round starts after a tick unless the other client is
 * in the middle of a round.  A client starts a round once its own deletes are
 * delivered; BACKOFF abstracts the implementation's jittered retry delay:
 *   0  retry at once;
 *   1  also wait until no delete of the other client is in flight;
 *   2  also wait until the other client is not in a round. */
#ifndef BACKOFF
#define BACKOFF 2
#endif
#if BACKOFF == 0
#define MAYSTART(x) (COUNT(dq, x, 0) == N)
#elif BACKOFF == 1
#define MAYSTART(x) (COUNT(dq, x, 0) == N && COUNT(dq, 1-(x), 0) == N)
#else
#define MAYSTART(x) (COUNT(dq, x, 0) == N && COUNT(dq, 1-(x), 0) == N && !INROUND(1-(x)))
#endif
proctype Client(byte c) {
  do
  :: atomic { ph[c] == IDLE && MAYSTART(c) ->
       if :: !INROUND(1-c) -> tick() :: else fi;
       ctok[c] = c + 1; start(c) }
  :: atomic { ph[c] == HOLD -> printf("%c: release: DEL to all nodes\n", NAME(c));
       releaseAll(c); vrem[c] = 0; ph[c] = IDLE; freed = 1 }
  od
}

/* property 3: after a release, some acquisition eventually succeeds */
ltl live { [] (freed -> <> !freed) }
#endif

init {
  atomic {
    for (k : 0 .. N-1) { up[k] = 1 }; k = 0;
#if GENCTR && N == 3
    /* Start after an arbitrary history of handouts.  The fencing logic only
     * compares counters and adds 1, so shifting all counters and the last
     * fence by a constant changes nothing, and with SYMM the order of the
     * nodes does not matter.  The last fence is as large as the two-phase
     * invariant allows: at most the counter of a majority, i.e. the median.
     * GENCTR=1: the two order types with a node behind the last fence,
     * 0 1 1 and 0 1 2 (last fence 1); GENCTR=2: also 0 0 0 and 0 0 1
     * (last fence 0), i.e. every order type of three counters. */
    if
    :: ctr[1] = 1; ctr[2] = 1; lastFence = 1          /* 0 1 1, last 1 */
    :: ctr[1] = 1; ctr[2] = 2; lastFence = 1          /* 0 1 2, last 1 */
#if GENCTR >= 2
    :: skip                                           /* 0 0 0, last 0 */
    :: ctr[2] = 1                                     /* 0 0 1, last 0 */
#endif
    fi;
    printf("start: counters %d %d %d, last fence handed out %d\n", ctr[0], ctr[1], ctr[2], lastFence);
    CANON;
#endif
    run Client(0); run Client(1);
    for (k : 0 .. N-1) { run Link(0, k); run Link(1, k) }; k = 0
  }
}
