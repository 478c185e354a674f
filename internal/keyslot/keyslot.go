// Package keyslot names the companion keys of a lock key (its fence
// counter, its queue) under the library's one reserved prefix, in the key's
// Redis Cluster hash slot, so that one script may touch them all on a
// cluster node, without renaming the key.
//
// A key's slot is CRC16 of its hash tag (the text between its first '{' and
// the first '}' after it, when that text is not empty), or of the whole key.
//
//	keyslot.Companion("orders:42", "fence")   // "redlock:{orders:42}:fence"
//	keyslot.Companion("{orders}:42", "fence") // "redlock:t:{orders}:42:fence"
package keyslot

import (
	"strings"
	"sync"
)

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot returns the hash slot of key, as CLUSTER KEYSLOT computes it.
func Slot(key string) int {
	if tag, ok := Tag(key); ok {
		key = tag
	}
	return int(crc16(key)) % Slots
}

// Tag returns key's hash tag and true, or "" and false when key has none:
// no '{', no '}' after the first '{', or nothing between them.
func Tag(key string) (string, bool) {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return "", false
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 {
		return "", false
	}
	return key[s+1 : s+1+e], true
}

// Prefix begins the name of every key the library writes beside a
// caller's lock keys: companions and the library's markers. A caller's key
// or election name never begins with it (keyspace.Check).
const Prefix = "redlock:"

// Companion returns the name of key's companion called name (a word from a
// set in which no ":"+word ends another, such as "fence" or
// "queue:leases"), under Prefix, in key's slot. The form after Prefix is
// told by its first byte, then the key is read back whole:
//
//   - a key with a hash tag: "t:" + key + ":" + name, which keeps the tag
//     (Prefix has no brace);
//   - a key without a tag and without '}': "{" + key + "}:" + name, whose
//     tag is the whole key;
//   - any other key (one with '}' but no tag, or the empty key): "s{" + t +
//     "}" + key + ":" + name, t being a short tag of key's slot.
//
// So distinct (key, name) pairs give distinct names: the forms differ in
// their first byte after Prefix ('t', '{', 's'), each gives its key back up
// to the final ":"+name, and no ":"+name ends another. The library's
// markers (keyspace) begin with other bytes after Prefix.
func Companion(key, name string) string {
	if _, ok := Tag(key); ok {
		return Prefix + "t:" + key + ":" + name
	}
	if key != "" && !strings.Contains(key, "}") {
		return Prefix + "{" + key + "}:" + name
	}
	return Prefix + "s{" + slotTag(Slot(key)) + "}" + key + ":" + name
}

// slotTag returns a short tag, without braces, whose slot is slot.
func slotTag(slot int) string {
	tagsOnce.Do(buildTags)
	return tags[slot]
}

var (
	tagsOnce sync.Once
	tags     []string
)

// tagAlphabet spells the tags of slotTag.
const tagAlphabet = "0123456789abcdefghijklmnopqrstuvwxyz"

// buildTags fills tags with the first string of tagAlphabet, in order of
// length then alphabet, that hashes to each slot. Strings of up to four
// letters cover every slot; built once, on first need.
func buildTags() {
	tags = make([]string, Slots)
	left := Slots
	buf := make([]byte, 0, 4)
	var walk func(n int) bool
	walk = func(n int) bool {
		if len(buf) == n {
			s := string(buf)
			if slot := int(crc16(s)) % Slots; tags[slot] == "" {
				tags[slot] = s
				left--
			}
			return left == 0
		}
		for i := range len(tagAlphabet) {
			buf = append(buf, tagAlphabet[i])
			done := walk(n)
			buf = buf[:len(buf)-1]
			if done {
				return true
			}
		}
		return false
	}
	for n := 1; n <= 4 && !walk(n); n++ {
	}
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), Redis
// Cluster's key hash.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// ShardChannel returns the sharded pub/sub channel named base in key's
// slot: "{t}" + base, t being a short tag of the slot. A script that runs
// on key's shard may SPUBLISH to it, and a message there goes to that shard
// only. Its leading '{' tells the scripts to use SPUBLISH.
func ShardChannel(base, key string) string {
	return "{" + slotTag(Slot(key)) + "}" + base
}
