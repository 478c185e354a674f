/*
 * Promela model of the waiting protocol (issue 15): per-node queues of
 * waiters, and the hand-off of the lock key to the head of a queue when the
 * key is released.  The companion of redlock.pml, in the same style;
 * docs/model.md gives the properties and what the configurations show;
 * docs/model/run.sh runs every configuration, each with a comment that
 * says what it checks.  Switches are set with
 *   spin -a -DNAME=VALUE handoff.pml
 *
 * The protocol, per node (each script runs atomically):
 *   SET K tok NX PX ttl      a plain attempt (TryLock, or the first try of Lock)
 *   ENQUEUE(w, seq, mayTake) K == w: reply GRANTED(grantSeq), the seq recorded
 *                            when K was set for w.  Else add or refresh w's
 *                            entry (seq, lease); if K is free, w is the head
 *                            of the queue and mayTake: K = w for ttl, remove
 *                            the entry, reply SET(seq); else reply QUEUED.
 *   RELEASE(tok)             remove tok's entry, if any.  If K == tok: delete
 *                            K, drop expired entries, pop the head h (if any),
 *                            K = h for ttl, and send h GRANT(h.seq)
 *                            (asynchronous: may be delayed or lost).
 * A waiter sends ENQUEUE in rounds seq = 1, 2, ... and records sendTime[seq]
 * before sending.  A grant from node i with seq s gives base_i =
 * sendTime[s]; the waiter holds once a majority granted and (the quorum-th
 * largest base_i) + ttl - drift is still in the future, and acts until then.
 *
 * Time.  As in redlock.pml: a global clock ticks; a node keeps the remaining
 * lifetime of K (krem) in global ticks, chosen when K is set: TTL ticks of
 * the node's clock, which may run fast by up to DRIFT_BOUND ticks over one
 * lifetime.  Clients keep remaining times, so no time horizon is needed:
 *   rv[s] = TTL - DRIFT - (now - sendTime[s])   (saturating at 0)
 *   gv[i] = rv[s] for the grant of node i       (what base_i leaves)
 *   (quorum-th largest base_i) + TTL - DRIFT - now = the median of gv[i]
 * (a node that did not grant counts 0).  A plain attempt's validity is
 * vrem = TTL - DRIFT - elapsed, as in redlock.pml.
 *
 * Processes.  Clock; one Link per (client, node), which delivers that
 * client's requests to that node and that node's GRANT messages to that
 * client; one Client per client.  The reply that decides runs the client's
 * decision in the same atomic step, as in redlock.pml.
 *
 * printf lines narrate a replayed trail (spin -t); the verifier ignores them.
 */

/* ---------------------------------------------------------------- switches */
#ifndef N
#define N 3                 /* Redis nodes: 3, or 1 for the per-node check */
#endif
#define MAJ (N/2+1)
#ifndef C
#define C 2                 /* clients A, B (and C): 2 or 3 */
#endif
#ifndef TTL
#define TTL 3               /* lock TTL, in ticks */
#endif
#ifndef DRIFT
#define DRIFT 1             /* drift allowance the client subtracts */
#endif
#ifndef DRIFT_BOUND
#define DRIFT_BOUND 1       /* actual node-vs-client drift over one key lifetime */
#endif
#ifndef MAXR
#define MAXR 2              /* ENQUEUE rounds in the waiting phase (1..3) */
#endif
/* Per client x: ATTx plain attempts; WAITSx = 1 makes them Lock's first tries:
 * once, after a failed first try (or before any try when ATTx = 0), the
 * client waits in the queues. */
#ifndef ATT0
#define ATT0 0
#endif
#ifndef ATT1
#define ATT1 2
#endif
#ifndef ATT2
#define ATT2 1
#endif
#ifndef WAITS0
#define WAITS0 1
#endif
#ifndef WAITS1
#define WAITS1 0
#endif
#ifndef WAITS2
#define WAITS2 0
#endif
#ifndef LOSS
#define LOSS 0              /* ENQUEUE replies may be lost */
#endif
#ifndef LEASE
#define LEASE 0             /* a queue entry may vanish at any moment (its lease ran out) */
#endif
#ifndef MAYTAKE
#define MAYTAKE 1           /* 0 or 1: every round sends this mayTake; 2: chosen per round */
#endif
/* behaviours that a counterexample search may leave out, to find its
 * counterexample sooner (every safe configuration keeps them) */
#ifndef TIMEOUTS
#define TIMEOUTS 1          /* a plain attempt may time out at any moment */
#endif
#ifndef GIVEUP
#define GIVEUP 1            /* a waiter may give up at any moment */
#endif
#ifndef RELEASES
#define RELEASES 1          /* a holder may release at any moment */
#endif
#ifndef CLAIM
#define CLAIM 1             /* check the per-node claim (see "properties") */
#endif
#ifndef SAMETOKEN
#define SAMETOKEN 0         /* the waiting phase reuses the failed first try's token */
#endif
/* Deliberately broken variants:
 *   1  the validity of a GRANT message is counted from its arrival, not from
 *      sendTime[seq]
 *   2  a GRANTED reply carries the seq of the request it answers instead of
 *      the seq recorded when K was set
 *   3  RELEASE hands K to the head but leaves the head's queue entry */
#ifndef BROKEN
#define BROKEN 0
#endif

#define ATT(x)   ((x) == 0 -> ATT0 : ((x) == 1 -> ATT1 : ATT2))
#define WAITS(x) ((x) == 0 -> WAITS0 : ((x) == 1 -> WAITS1 : WAITS2))
#define TPC 3                           /* tokens per client */
#define PTOK(x, a) ((x)*TPC + (a))      /* plain attempt a = 1, 2 */
#define WTOK(x)    ((x)*TPC + 3)        /* the waiting phase */
#define NAME(x)    (65 + (x))           /* 'A', 'B', 'C' for printf %c */

/* ------------------------------------------------------------------- nodes */
byte key[N];                /* token stored under K, 0 = free */
byte krem[N];               /* remaining lifetime of K, in global ticks */
byte kseq[N];               /* K set for a waiter: the seq recorded then, else 0 */
byte qs[C*N];               /* queue entry of client c's waiter on node n (slot
                             * c*N+n): seq of its last request the node
                             * processed, 0 = no entry */
byte tk[C];                 /* ticket of client c's waiter, the same on every
                             * node: the queue is ordered by it */
byte ntk;                   /* tickets handed out */

/* ---------------------------------------------------------------- messages
 * Client to node, slot c*N+n.  A newer request of the same kind replaces an
 * undelivered older one, which is then lost (so a waiter's rounds reach a
 * node in order, some of them possibly never). */
byte sq[C*N];               /* SET NX PX: the token */
byte rq[C*N];               /* RELEASE: the token */
byte eq[C*N];               /* ENQUEUE: seq, + 4 if mayTake; 0 = none */
/* Node to client: GRANT(seq) messages, one bit per seq (bit seq-1): they
 * arrive in any order, at any time, or never. */
byte gq[C*N];

/* ----------------------------------------------------------------- clients */
#define IDLE   0
#define P1     1            /* plain attempt: waiting for SET replies */
#define WAIT   2            /* waiting phase: ENQUEUE rounds */
#define HOLD   3            /* believes it holds while vrem > 0 */
#define FAILED 4            /* idle, and the last plain attempt failed */
byte ph[C];                 /* phase */
byte ctok[C];               /* token of the attempt or waiting phase */
byte vrem[C];               /* remaining validity, global ticks */
byte yes[C];                /* plain attempt: nodes that granted ... */
byte no[C];                 /* ... and that refused (a node answers a SET once) */
bool waited[C];             /* the client's one waiting phase has begun */
byte wt[C];                 /* its token (ENQUEUE requests carry it) */
byte rnd[C];                /* rounds sent in the waiting phase */
byte rv[C*MAXR];            /* slot c*MAXR + seq-1: validity left from sendTime[seq] */
byte gv[C*N];               /* slot c*N+n: validity left from node n's grant, 0 = none */

/* scratch, used only inside atomic steps and left 0 */
byte k;                     /* loop index */
byte r;                     /* reply: 0 none, 1 no or QUEUED, 2 yes or SET, 3 GRANTED */
byte s;                     /* seq of the ENQUEUE or GRANT being delivered */
byte g;                     /* seq that a reply carries */
byte h;                     /* head of a queue; a waiter's median validity */

#define IDLING(x) (ph[x] == IDLE || ph[x] == FAILED)
#define WAITTOK(x) wt[x]
#define HOLDS(x)  (ph[x] == HOLD && vrem[x] > 0)
#define MIN(a, b) ((a) < (b) -> (a) : (b))
#define MAX(a, b) ((a) > (b) -> (a) : (b))
#if N == 3
/* the quorum-th (2nd) largest of three */
#define MED(x) MAX(MIN(gv[(x)*N+0], gv[(x)*N+1]), MIN(MAX(gv[(x)*N+0], gv[(x)*N+1]), gv[(x)*N+2]))
#endif
/* The per-node claim: while client x waits, a grant it counts from node n
 * is backed by K == w on node n, for at least as long as the validity it
 * counts.  (Only w can delete K == w, so the claim holds on after a hold.) */
#define CLAIMED(x, n) (gv[(x)*N+(n)] == 0 || (key[n] == WAITTOK(x) && krem[n] >= gv[(x)*N+(n)]))

/* ----------------------------------------------------- symmetry reduction
 * As in redlock.pml: with -DSYMM every atomic step ends by sorting the nodes
 * into a canonical order, and all node-indexed data moves together.  Between
 * steps every Link is at its loop head (the scratch variables are 0), so
 * swapping two nodes' data is the same as swapping their Links, and no
 * property names a node.  Used for safe runs only, so that counterexample
 * trails keep stable node numbers. */
#if defined(SYMM) && N == 3
c_code {
  static int node_cmp(int i, int j) {
    int x, d;
    if ((d = (int)now.key[i] - (int)now.key[j]) != 0) return d;
    if ((d = (int)now.krem[i] - (int)now.krem[j]) != 0) return d;
    if ((d = (int)now.kseq[i] - (int)now.kseq[j]) != 0) return d;
    for (x = 0; x < C; x++) {
      if ((d = (int)now.qs[x*3+i] - (int)now.qs[x*3+j]) != 0) return d;
      if ((d = (int)now.sq[x*3+i] - (int)now.sq[x*3+j]) != 0) return d;
      if ((d = (int)now.rq[x*3+i] - (int)now.rq[x*3+j]) != 0) return d;
      if ((d = (int)now.eq[x*3+i] - (int)now.eq[x*3+j]) != 0) return d;
      if ((d = (int)now.gq[x*3+i] - (int)now.gq[x*3+j]) != 0) return d;
      if ((d = (int)now.gv[x*3+i] - (int)now.gv[x*3+j]) != 0) return d;
    }
    return 0;
  }
#define SW(f, i, j) { uchar t_ = now.f[i]; now.f[i] = now.f[j]; now.f[j] = t_; }
  static void node_swap(int i, int j) {
    int x;
    SW(key, i, j); SW(krem, i, j); SW(kseq, i, j);
    for (x = 0; x < C; x++) {
      SW(qs, x*3+i, x*3+j); SW(sq, x*3+i, x*3+j); SW(rq, x*3+i, x*3+j);
      SW(eq, x*3+i, x*3+j); SW(gq, x*3+i, x*3+j); SW(gv, x*3+i, x*3+j);
    }
  }
  static void canon(void) {
    if (node_cmp(0, 1) > 0) node_swap(0, 1);
    if (node_cmp(1, 2) > 0) node_swap(1, 2);
    if (node_cmp(0, 1) > 0) node_swap(0, 1);
  }
}
#define CANON c_code { canon(); }
#else
#define CANON skip
#endif

/* ----------------------------------------------------- client-side actions
 * These run inside an atomic step: of a Client, or of a Link delivering the
 * reply or message that decides. */

/* property 1: mutual exclusion, checked whenever a client starts to hold */
inline exclusive(x) {
  for (k : 0 .. C-1) {
    assert(k == x || !(HOLDS(x) && HOLDS(k)))
  };
  k = 0
}

inline releaseAll(x) {      /* RELEASE(token) to ALL nodes */
  for (k : 0 .. N-1) { rq[(x)*N+k] = ctok[x] }; k = 0
}

inline round(x) {           /* the next ENQUEUE round, to all nodes */
  rnd[x]++;
  rv[(x)*MAXR + rnd[x]-1] = TTL - DRIFT;   /* sendTime[seq] = now */
  if
#if MAYTAKE != 0
  :: for (k : 0 .. N-1) { eq[(x)*N+k] = rnd[x] + 4 }; k = 0;
     printf("%c: ENQUEUE(%d, seq %d, mayTake) to all nodes\n", NAME(x), ctok[x], rnd[x])
#endif
#if MAYTAKE != 1
  :: for (k : 0 .. N-1) { eq[(x)*N+k] = rnd[x] }; k = 0;
     printf("%c: ENQUEUE(%d, seq %d, queue only) to all nodes\n", NAME(x), ctok[x], rnd[x])
#endif
  fi
}

/* The waiting phase ends: the client forgets its rounds and grants, and
 * stops listening for GRANT messages (those in flight are dropped). */
inline endWait(x) {
  rnd[x] = 0;
  for (k : 0 .. MAXR-1) { rv[(x)*MAXR+k] = 0 };
  for (k : 0 .. N-1) { gv[(x)*N+k] = 0; gq[(x)*N+k] = 0 };
  k = 0
}

inline enterWait(x) {
  waited[x] = 1;
#if !SAMETOKEN
  ctok[x] = WTOK(x);        /* a fresh token for the waiting phase */
#endif
  wt[x] = ctok[x];
  ntk++; tk[x] = ntk;
  ph[x] = WAIT;
  printf("%c: waits with token %d, ticket %d\n", NAME(x), ctok[x], tk[x]);
  round(x)
}

inline fail(x) {            /* a failed plain attempt: clean up everywhere */
  printf("%c: attempt with token %d failed; RELEASE to all nodes\n", NAME(x), ctok[x]);
  releaseAll(x);
  yes[x] = 0; no[x] = 0; vrem[x] = 0; ph[x] = FAILED
}

inline decide1(x) {         /* as in redlock.pml, without fencing */
  if
  :: yes[x] >= MAJ && vrem[x] > 0 ->
     ph[x] = HOLD; yes[x] = 0; no[x] = 0;
     printf("%c: ACQUIRED with token %d, validity left %d tick(s)\n", NAME(x), ctok[x], vrem[x]);
     exclusive(x)
  :: yes[x] >= MAJ && vrem[x] == 0 -> fail(x)
  :: no[x] > N - MAJ -> fail(x)
  :: else
  fi
}

/* The waiter hears that node n granted it K, with validity v left.  Of
 * several grants from one node it keeps the one that leaves the most. */
inline granted(x, n, v) {
  if
  :: ph[x] == WAIT ->
     if :: gv[(x)*N+n] < v -> gv[(x)*N+n] = v :: else fi;
#if CLAIM
     assert(CLAIMED(x, n));
#endif
#if N == 3
     h = MED(x);                  /* the quorum-th largest base, as validity */
     if
     :: h > 0 ->
        vrem[x] = h; ph[x] = HOLD;
        printf("%c: ACQUIRED by waiting, token %d, validity left %d tick(s)\n",
               NAME(x), ctok[x], vrem[x]);
        endWait(x);
        exclusive(x)
     :: else
     fi;
     h = 0
#endif
     /* N == 1 (per-node check): the waiter never decides to hold; giving up
      * at any moment looks the same to the node as holding, then releasing */
  :: else
  fi
}

/* ------------------------------------------------------- node-side commands
 * A new lifetime of K: TTL ticks of the node's clock, which may run fast by
 * up to DRIFT_BOUND ticks, so TTL - d global ticks, 0 <= d <= DRIFT_BOUND. */
inline lifetime(n) {
  krem[n] = TTL;
  do
  :: krem[n] > TTL - DRIFT_BOUND && krem[n] > 1 -> krem[n]--
  :: break
  od
}

/* h = the head of node n's queue (the entry with the smallest ticket), or C */
inline head(n) {
  h = C;
  for (k : 0 .. C-1) {
    if
    :: qs[k*N+n] != 0 && (h == C || tk[k] < tk[h]) -> h = k
    :: else
    fi
  };
  k = 0
}

/* ENQUEUE(w, s, mayTake) of client c's waiter reaches node n */
inline ENQUEUE(c, n) {
  if
  :: key[n] == WAITTOK(c) ->
     r = 3;
#if BROKEN == 2
     g = s;                       /* broken: the seq of this request */
#else
     g = kseq[n];                 /* the seq recorded when K was set */
#endif
     printf("node %d: ENQUEUE(%d, seq %d): K is its own: GRANTED(seq %d)\n", n, key[n], s, g)
  :: else ->
     qs[c*N+n] = s;               /* add or refresh the entry (and its lease) */
     head(n);
     if
     :: key[n] == 0 && h == c && eq[c*N+n] >= 4 ->
        key[n] = WAITTOK(c); kseq[n] = s; lifetime(n); qs[c*N+n] = 0; r = 2; g = s;
        printf("node %d: ENQUEUE(%d, seq %d): head, K free: SET, expires in %d tick(s)\n",
               n, key[n], s, krem[n])
     :: else ->
        r = 1;
        printf("node %d: ENQUEUE(%d, seq %d): QUEUED (K is %d)\n", n, WAITTOK(c), s, key[n])
     fi;
     h = 0
  fi;
#if LOSS
  if
  :: skip
  :: r >= 2 -> r = 0; printf("node %d: the reply is lost\n", n)
  fi;
#endif
  if
  :: r >= 2 && g > 0 -> granted(c, n, rv[c*MAXR+g-1])
  /* (g == 0 only with SAMETOKEN: K was set by the first try's late SET, so
   * no seq was recorded and the waiter cannot count it) */
  :: else
  fi;
  eq[c*N+n] = 0; r = 0; s = 0; g = 0; CANON
}

/* GRANT(s) from node n reaches client c */
inline GRANTMSG(c, n) {
#if BROKEN == 1
  printf("%c: GRANT(seq %d) from node %d arrives; validity counted from now (broken)\n", NAME(c), s, n);
  granted(c, n, TTL - DRIFT);
#else
  printf("%c: GRANT(seq %d) from node %d arrives\n", NAME(c), s, n);
  granted(c, n, rv[c*MAXR+s-1]);
#endif
  gq[c*N+n] = gq[c*N+n] & ~(1 << (s-1)); s = 0; CANON
}

proctype Link(byte c; byte n) {
end:
  do
  /* SET K tok NX PX ttl */
  :: atomic {
       sq[c*N+n] != 0 ->
       if
       :: key[n] == 0 ->
          key[n] = sq[c*N+n]; lifetime(n); r = 2;
          printf("node %d: SET token %d granted, key expires in %d tick(s)\n", n, key[n], krem[n])
       :: else ->
          r = 1; printf("node %d: SET token %d refused (K is %d)\n", n, sq[c*N+n], key[n])
       fi;
       if    /* a reply counts only while the client waits for this attempt */
       :: ph[c] == P1 && ctok[c] == sq[c*N+n] ->
          if :: r == 2 -> yes[c]++ :: else -> no[c]++ fi;
          decide1(c)
       :: else
       fi;
       r = 0; sq[c*N+n] = 0; CANON
     }
  /* ENQUEUE(w, seq, mayTake) */
  :: atomic { eq[c*N+n] != 0 -> s = eq[c*N+n] & 3; ENQUEUE(c, n) }
  /* RELEASE(tok) */
  :: atomic {
       rq[c*N+n] != 0 ->
       if
       :: rq[c*N+n] == WAITTOK(c) && qs[c*N+n] != 0 ->
          qs[c*N+n] = 0; printf("node %d: RELEASE(%d) removes its queue entry\n", n, rq[c*N+n])
       :: else
       fi;
       if
       :: key[n] == rq[c*N+n] ->
          key[n] = 0; krem[n] = 0; kseq[n] = 0;
          head(n);
          if
          :: h < C ->
             key[n] = WAITTOK(h); kseq[n] = qs[h*N+n]; lifetime(n);
#if BROKEN != 3
             qs[h*N+n] = 0;
#endif
             if   /* a client that no longer waits does not listen */
             :: ph[h] == WAIT -> gq[h*N+n] = gq[h*N+n] | (1 << (kseq[n]-1))
             :: else
             fi;
             printf("node %d: RELEASE(%d) deletes K, hands it to %c (token %d, seq %d, expires in %d tick(s)), sends GRANT\n",
                    n, rq[c*N+n], NAME(h), key[n], kseq[n], krem[n])
          :: else -> printf("node %d: RELEASE(%d) deletes K; the queue is empty\n", n, rq[c*N+n])
          fi;
          h = 0
       :: else
       fi;
#if CLAIM
       /* besides the clock, a RELEASE is the only step that can take K
        * from a waiter (SET and ENQUEUE only set a free K) */
       for (k : 0 .. C-1) { assert(CLAIMED(k, n)) }; k = 0;
#endif
       rq[c*N+n] = 0; CANON
     }
  /* GRANT(seq) messages from node n to client c, in any order */
  :: atomic {
       gq[c*N+n] != 0 ->
       if
       :: (gq[c*N+n] & 1) -> s = 1
       :: (gq[c*N+n] & 2) -> s = 2
       :: (gq[c*N+n] & 4) -> s = 3
       fi;
       GRANTMSG(c, n)
     }
#if LEASE
  /* The entry's lease runs out and the node drops it.  (The scripts drop
   * expired entries when they run; any moment is a superset.) */
  :: atomic { qs[c*N+n] != 0 ->
       printf("node %d: the lease of %c's queue entry ran out\n", n, NAME(c));
       qs[c*N+n] = 0; CANON }
#endif
  od
  /* A request or message that is lost is one that is never delivered. */
}

/* -------------------------------------------------------------- the clock */
inline tick() {
  printf("---- tick ----\n");
  for (k : 0 .. N-1) {
    if
    :: key[k] != 0 ->
       krem[k]--;
       if :: krem[k] == 0 -> key[k] = 0; kseq[k] = 0; printf("node %d: key expired\n", k) :: else fi
    :: else
    fi
  };
  for (k : 0 .. C-1) { if :: vrem[k] > 0 -> vrem[k]-- :: else fi };
  for (k : 0 .. C*MAXR-1) { if :: rv[k] > 0 -> rv[k]-- :: else fi };
  for (k : 0 .. C*N-1) { if :: gv[k] > 0 -> gv[k]-- :: else fi };
  k = 0
#if CLAIM
  ;
  /* the claim cannot break while time passes: K expires no earlier than
   * the grant's validity */
  for (k : 0 .. C*N-1) { assert(CLAIMED(k / N, k % N)) };
  k = 0
#endif
}

active proctype Clock() {
end:
  do
  :: atomic { tick(); CANON }
  od
}

/* ------------------------------------------------------------------ client */
proctype Client(byte c) {
  byte a = 0;                     /* plain attempts so far */
end:
  do
  :: atomic { IDLING(c) && a < ATT(c) ->
       a++; ctok[c] = PTOK(c, a);
       vrem[c] = TTL - DRIFT;      /* the validity clock starts before sending */
       printf("%c: new attempt, token %d: SET NX PX to all nodes (validity %d tick(s))\n",
              NAME(c), ctok[c], vrem[c]);
       for (k : 0 .. N-1) { sq[c*N+k] = ctok[c] }; k = 0;
       ph[c] = P1; CANON }
  /* per-node timeouts: the client may stop waiting at any time */
  :: atomic { TIMEOUTS && ph[c] == P1 -> printf("%c: timeout\n", NAME(c)); fail(c); CANON }
  /* Lock: after a failed first try (or instead of one), wait in the queues;
   * at most once per client */
  :: atomic { WAITS(c) && !waited[c] && (ph[c] == FAILED || ph[c] == IDLE && a == 0) ->
       enterWait(c); CANON }
  /* the next round, at any time (woken, or to refresh the lease) */
  :: atomic { ph[c] == WAIT && rnd[c] < MAXR -> round(c); CANON }
  /* a waiter gives up at any time */
  :: atomic { GIVEUP && ph[c] == WAIT ->
       printf("%c: gives up; RELEASE(%d) to all nodes\n", NAME(c), ctok[c]);
       releaseAll(c); endWait(c); ph[c] = IDLE; CANON }
  /* release at any time, whether or not the validity has run out */
  :: atomic { RELEASES && ph[c] == HOLD ->
       printf("%c: release: RELEASE(%d) to all nodes\n", NAME(c), ctok[c]);
       releaseAll(c); vrem[c] = 0; ph[c] = IDLE; CANON }
  od
}

init {
  atomic {
    for (k : 0 .. C-1) { run Client(k) };
    for (k : 0 .. N-1) { run Link(0, k); run Link(1, k) };
#if C == 3
    for (k : 0 .. N-1) { run Link(2, k) };
#endif
    k = 0
  }
}
