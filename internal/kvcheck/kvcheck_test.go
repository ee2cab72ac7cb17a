package kvcheck

import (
	"os"
	"testing"
	"time"
)

func put(c int, k, v string, call, ret int64) Op {
	return Op{Client: c, Input: Input{Kind: Put, Key: k, Value: v}, Call: call, Return: ret}
}

func get(c int, k, v string, found bool, call, ret int64) Op {
	return Op{Client: c, Input: Input{Kind: Get, Key: k}, Output: Output{Found: found, Value: v}, Call: call, Return: ret}
}

// The checker must accept what etcd may do and catch what it must not: it is the oracle of the
// fault campaigns, so a checker that passes everything would prove nothing.
func TestCheck(t *testing.T) {
	unknown := func(op Op) Op { op.Output.Unknown = true; return op }
	cas := func(c int, k, expect, v string, ok bool, call, ret int64) Op {
		return Op{Client: c, Input: Input{Kind: CAS, Key: k, Expect: expect, Value: v}, Output: Output{OK: ok}, Call: call, Return: ret}
	}
	del := func(c int, k string, call, ret int64) Op {
		return Op{Client: c, Input: Input{Kind: Delete, Key: k}, Call: call, Return: ret}
	}
	cases := []struct {
		name string
		ops  []Op
		want bool
	}{
		{"sequential put then get", []Op{put(0, "k", "a", 0, 10), get(1, "k", "a", true, 20, 30)}, true},
		{"concurrent get may see either", []Op{put(0, "k", "a", 0, 10), put(0, "k", "b", 20, 40), get(1, "k", "a", true, 25, 30)}, true},
		{"stale read after an acknowledged put", []Op{put(0, "k", "a", 0, 10), put(0, "k", "b", 20, 30), get(1, "k", "a", true, 40, 50)}, false},
		{"acknowledged write lost", []Op{put(0, "k", "a", 0, 10), get(1, "k", "", false, 20, 30)}, false},
		{"unknown put that took effect", []Op{unknown(put(0, "k", "a", 0, 10)), get(1, "k", "a", true, 20, 30)}, true},
		{"unknown put that did not", []Op{unknown(put(0, "k", "a", 0, 10)), get(1, "k", "", false, 20, 30)}, true},
		{"unknown put seen, then unseen", []Op{unknown(put(0, "k", "a", 0, 10)), get(1, "k", "a", true, 20, 30), get(1, "k", "", false, 40, 50)}, false},
		{"refused put never applies", []Op{{Input: Input{Kind: Put, Key: "k", Value: "a"}, Output: Output{Failed: true}, Call: 0, Return: 10},
			get(1, "k", "a", true, 20, 30)}, false},
		{"cas succeeds on the expected value", []Op{put(0, "k", "a", 0, 10), cas(1, "k", "a", "b", true, 20, 30), get(2, "k", "b", true, 40, 50)}, true},
		{"cas cannot succeed twice on one value", []Op{put(0, "k", "a", 0, 10), cas(1, "k", "a", "b", true, 20, 30), cas(2, "k", "a", "c", true, 40, 50)}, false},
		{"delete then get", []Op{put(0, "k", "a", 0, 10), del(0, "k", 20, 30), get(1, "k", "", false, 40, 50)}, true},
		{"keys are independent", []Op{put(0, "x", "a", 0, 10), put(1, "y", "b", 0, 10), get(2, "x", "a", true, 20, 30), get(2, "y", "b", true, 20, 30)}, true},
	}
	for _, tc := range cases {
		res, err := Check(tc.ops, 10*time.Second, "")
		if err != nil {
			t.Fatal(err)
		}
		if res.Linearizable != tc.want || res.TimedOut {
			t.Errorf("%s: linearizable %v (timed out %v), want %v", tc.name, res.Linearizable, res.TimedOut, tc.want)
		}
	}
}

// A history that is not linearizable is written out for a human to read.
func TestCheckVisualizes(t *testing.T) {
	dir := t.TempDir()
	res, err := Check([]Op{put(0, "k", "a", 0, 10), get(1, "k", "", false, 20, 30)}, 10*time.Second, dir)
	if err != nil {
		t.Fatal(err)
	}
	if res.Linearizable || res.Visualization == "" {
		t.Fatalf("%+v", res)
	}
	if fi, err := os.Stat(res.Visualization); err != nil || fi.Size() == 0 {
		t.Fatalf("visualization %s: %v", res.Visualization, err)
	}
}
