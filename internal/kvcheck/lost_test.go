package kvcheck

import "testing"

// LostWrites must count what a read proves lost and nothing a concurrent or unknown write explains.
func TestLostWrites(t *testing.T) {
	unknown := func(op Op) Op { op.Output.Unknown = true; return op }
	del := func(c int, k string, call, ret int64) Op {
		return Op{Client: c, Input: Input{Kind: Delete, Key: k}, Call: call, Return: ret}
	}
	cas := func(c int, k, expect, v string, ok bool, call, ret int64) Op {
		return Op{Client: c, Input: Input{Kind: CAS, Key: k, Expect: expect, Value: v}, Output: Output{OK: ok}, Call: call, Return: ret}
	}
	cases := []struct {
		name string
		ops  []Op
		want int
	}{
		{"put then get", []Op{put(0, "k", "a", 0, 10), get(1, "k", "a", true, 20, 30)}, 0},
		{"acknowledged put then no key", []Op{put(0, "k", "a", 0, 10), get(1, "k", "", false, 20, 30)}, 1},
		{"stale read after an acknowledged put", []Op{put(0, "k", "a", 0, 10), put(0, "k", "b", 20, 30), get(1, "k", "a", true, 40, 50)}, 1},
		{"concurrent get may see either", []Op{put(0, "k", "a", 0, 10), put(0, "k", "b", 20, 40), get(1, "k", "a", true, 25, 30)}, 0},
		{"a read before the acknowledgement proves nothing", []Op{put(0, "k", "a", 0, 10), put(0, "k", "b", 20, 40), get(1, "k", "a", true, 35, 50)}, 0},
		{"a concurrent put overwrote it", []Op{put(0, "k", "a", 0, 10), put(1, "k", "b", 5, 30), get(2, "k", "b", true, 40, 50)}, 0},
		{"an unknown delete may have removed it", []Op{put(0, "k", "a", 0, 10), unknown(del(1, "k", 20, 25)), get(2, "k", "", false, 40, 50)}, 0},
		{"an acknowledged delete before the put does not", []Op{del(1, "k", 0, 5), put(0, "k", "a", 10, 20), get(2, "k", "", false, 40, 50)}, 1},
		{"an unknown put is never lost", []Op{unknown(put(0, "k", "a", 0, 10)), get(1, "k", "", false, 20, 30)}, 0},
		{"a lost delete", []Op{put(0, "k", "a", 0, 10), del(0, "k", 20, 30), get(1, "k", "a", true, 40, 50)}, 1},
		{"a lost cas", []Op{put(0, "k", "a", 0, 10), cas(0, "k", "a", "b", true, 20, 30), get(1, "k", "a", true, 40, 50)}, 1},
		{"a failed cas writes nothing", []Op{put(0, "k", "a", 0, 10), cas(0, "k", "x", "b", false, 20, 30), get(1, "k", "a", true, 40, 50)}, 0},
		{"counted once however many reads", []Op{put(0, "k", "a", 0, 10), get(1, "k", "", false, 20, 30), get(1, "k", "", false, 40, 50)}, 1},
	}
	for _, tc := range cases {
		if got := LostWrites(tc.ops); got != tc.want {
			t.Errorf("%s: %d lost, want %d", tc.name, got, tc.want)
		}
	}
}
