package pool

import "testing"

// A sharded subscription names one channel per command: SSUBSCRIBE over
// channels of several slots answers CROSSSLOT, and a listener that
// (re)connects subscribes every channel it wants at once. Plain
// subscriptions stay one command.
func TestSubscriptionEncoding(t *testing.T) {
	chans := []string{"{a}:grant", "{b}:grant"}
	got := string(shardedCommands.encode("SSUBSCRIBE", chans))
	want := "*2\r\n$10\r\nSSUBSCRIBE\r\n$9\r\n{a}:grant\r\n*2\r\n$10\r\nSSUBSCRIBE\r\n$9\r\n{b}:grant\r\n"
	if got != want {
		t.Errorf("sharded: %q, want %q", got, want)
	}
	got = string(plainCommands.encode("SUBSCRIBE", chans))
	want = "*3\r\n$9\r\nSUBSCRIBE\r\n$9\r\n{a}:grant\r\n$9\r\n{b}:grant\r\n"
	if got != want {
		t.Errorf("plain: %q, want %q", got, want)
	}
}
