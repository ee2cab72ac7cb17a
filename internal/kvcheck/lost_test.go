package kvcheck

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

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

// naiveLostOnKey is the definition, quadratic: every acknowledged write against every later
// read (and a missing read against every delete). lostOnKey must agree with it.
func naiveLostOnKey(ops []Op) int {
	p := partition(ops)
	lost := 0
	for _, w := range p.acked {
		for _, r := range p.reads {
			if r.Call > w.Return && naiveContradicts(r, w, ops, p.writer) {
				lost++
				break
			}
		}
	}
	return lost
}

func naiveContradicts(r, w Op, ops []Op, writer map[string]Op) bool {
	if r.Output.Found {
		src, ok := writer[r.Output.Value]
		return ok && src.Input.Value != w.Input.Value && !src.Output.Unknown && src.Return < w.Call
	}
	if w.Input.Kind == Delete {
		return false
	}
	for _, d := range ops {
		if d.Input.Kind == Delete && !d.Output.Failed && d.Call < r.Return && returned(d) > w.Call {
			return false
		}
	}
	return true
}

// Random histories of one key (overlapping operations, unknown and failed outcomes, reads of
// any value written): the fast count equals the definition's.
func TestLostOnKeyMatchesTheDefinition(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	withLoss := 0
	for round := range 2000 {
		var ops []Op
		var values []string
		for i := range 2 + r.IntN(12) {
			call := int64(r.IntN(100))
			op := Op{Client: i, Call: call, Return: call + 1 + int64(r.IntN(30))}
			switch k := r.IntN(4); {
			case k == 0 || len(values) == 0 && k == 3:
				op.Input = Input{Kind: Put, Key: "k", Value: fmt.Sprintf("v%d", i)}
				values = append(values, op.Input.Value)
			case k == 1:
				op.Input = Input{Kind: Delete, Key: "k"}
			case k == 2:
				op.Input = Input{Kind: CAS, Key: "k", Value: fmt.Sprintf("v%d", i)}
				op.Output.OK = r.IntN(2) == 0
				values = append(values, op.Input.Value)
			default:
				op.Input = Input{Kind: Get, Key: "k"}
				if r.IntN(3) > 0 {
					op.Output.Found, op.Output.Value = true, values[r.IntN(len(values))]
				}
			}
			op.Output.Unknown = r.IntN(8) == 0
			op.Output.Failed = !op.Output.Unknown && r.IntN(10) == 0
			ops = append(ops, op)
		}
		got, want := lostOnKey(slices.Clone(ops)), naiveLostOnKey(ops)
		if got != want {
			t.Fatalf("round %d: %d lost, the definition says %d\n%+v", round, got, want, ops)
		}
		if want > 0 {
			withLoss++
		}
	}
	if withLoss < 100 {
		t.Errorf("only %d of the random histories lose a write: the comparison proves little", withLoss)
	}
}
