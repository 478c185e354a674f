package keyslot

import (
	"strings"
	"testing"
)

func TestCRC16(t *testing.T) {
	// The check value of CRC-16/XMODEM, also the Redis Cluster spec's.
	if got := crc16("123456789"); got != 0x31C3 {
		t.Fatalf("crc16 = %#x, want 0x31c3", got)
	}
}

func TestSlot(t *testing.T) {
	// Slots as CLUSTER KEYSLOT gives them (checked on redis-server 7.0).
	for key, want := range map[string]int{
		"":              0,
		"foo":           12182,
		"{user1000}.a":  Slot("user1000"),
		"foo{}{bar}":    Slot("foo{}{bar}"),
		"foo{{bar}}zap": Slot("{bar"),
		"foo{bar}{zap}": Slot("bar"),
	} {
		if got := Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestTag(t *testing.T) {
	for _, tc := range []struct {
		key, tag string
		ok       bool
	}{
		{"plain", "", false},
		{"{a}", "a", true},
		{"x{a}y{b}", "a", true},
		{"{}", "", false},
		{"{}{a}", "", false},
		{"a}{b", "", false},
		{"{{a}}", "{a", true},
		{"{a", "", false},
		{"}", "", false},
	} {
		tag, ok := Tag(tc.key)
		if tag != tc.tag || ok != tc.ok {
			t.Errorf("Tag(%q) = %q, %v; want %q, %v", tc.key, tag, ok, tc.tag, tc.ok)
		}
	}
}

var names = []string{"fence", "queue", "queue:leases", "queue:entries", "queue:left", "queue:watch", "queue:holds", "held", "readers", "leader", "holder", "election"}

func TestCompanion(t *testing.T) {
	for _, tc := range []struct{ key, want string }{
		{"orders:42", "redlock:{orders:42}:fence"},
		{"{orders}:42", "redlock:t:{orders}:42:fence"},
		{"a{b", "redlock:{a{b}:fence"},
		{"{}", "redlock:s{" + slotTag(Slot("{}")) + "}{}:fence"},
		{"a}b", "redlock:s{" + slotTag(Slot("a}b")) + "}a}b:fence"},
		{"", "redlock:s{" + slotTag(0) + "}:fence"},
	} {
		if got := Companion(tc.key, "fence"); got != tc.want {
			t.Errorf("Companion(%q) = %q, want %q", tc.key, got, tc.want)
		}
	}
	for _, key := range []string{"", "k", "{", "}", "{}", "}{", "{}}", "{{}}", "a{}b{c}", "x{y}z", "{a}}", "\x00{\xff}", "é}"} {
		checkCompanions(t, key)
	}
}

// checkCompanions checks that every companion of key is in its slot, has a
// tag, and differs from the key and from the other companions.
func checkCompanions(t *testing.T, key string) {
	t.Helper()
	seen := map[string]bool{key: true}
	for _, n := range names {
		c := Companion(key, n)
		if Slot(c) != Slot(key) {
			t.Fatalf("Companion(%q, %q) = %q: slot %d, key's slot %d", key, n, c, Slot(c), Slot(key))
		}
		if _, ok := Tag(c); !ok {
			t.Fatalf("Companion(%q, %q) = %q has no hash tag", key, n, c)
		}
		if !strings.HasPrefix(c, Prefix) {
			t.Fatalf("Companion(%q, %q) = %q is not under %q", key, n, c, Prefix)
		}
		if seen[c] {
			t.Fatalf("Companion(%q, %q) = %q is not unique", key, n, c)
		}
		seen[c] = true
	}
}

func TestSlotTags(t *testing.T) {
	for slot := range Slots {
		tag := slotTag(slot)
		if tag == "" || strings.ContainsAny(tag, "{}") || int(crc16(tag))%Slots != slot {
			t.Fatalf("slotTag(%d) = %q (slot %d)", slot, tag, int(crc16(tag))%Slots)
		}
	}
}

// FuzzCompanion checks, for any key, that the companions are in the key's
// slot and that two keys never share a companion.
func FuzzCompanion(f *testing.F) {
	for _, s := range []string{"", "k", "{a}", "{}", "a}b", "{a}:fence", "fence{a}", "{fence{a}}"} {
		f.Add(s, "{"+s+"}")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		checkCompanions(t, a)
		if a == b {
			return
		}
		for _, n := range names {
			for _, m := range names {
				if Companion(a, n) == Companion(b, m) {
					t.Fatalf("Companion(%q, %q) == Companion(%q, %q) == %q", a, n, b, m, Companion(a, n))
				}
			}
		}
	})
}

func TestShardChannel(t *testing.T) {
	for _, key := range []string{"orders:42", "{orders}:42", "a}b", "", "x{}y"} {
		ch := ShardChannel("redlock:grant:ID", key)
		if got, want := Slot(ch), Slot(key); got != want {
			t.Errorf("ShardChannel(_, %q) = %q in slot %d, want the key's slot %d", key, ch, got, want)
		}
		if ch[0] != '{' || !strings.HasSuffix(ch, "}redlock:grant:ID") {
			t.Errorf("ShardChannel(_, %q) = %q, want {tag}redlock:grant:ID", key, ch)
		}
	}
}
