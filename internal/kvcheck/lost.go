package kvcheck

import (
	"math"
	"sort"
)

// LostWrites counts the acknowledged writes a later read contradicts: the read began after
// the write was acknowledged, yet saw the key as it was before the write, with no other write
// that could have come in between. A linearizable history has none; the count says how many
// acknowledged writes a history that is not linearizable lost, which the verdict alone does
// not. Writes with an unknown outcome are never counted lost (they may not have applied), but
// they may explain a read.
func LostWrites(ops []Op) int {
	byKey := map[string][]Op{}
	for _, op := range ops {
		byKey[op.Input.Key] = append(byKey[op.Input.Key], op)
	}
	lost := 0
	for _, keyOps := range byKey {
		lost += lostOnKey(keyOps)
	}
	return lost
}

// lostOnKey is LostWrites for the operations on one key, in O(n log n): a long campaign round
// has tens of thousands of operations on a key, so each write cannot scan every read (and,
// for a read that found nothing, every delete).
func lostOnKey(ops []Op) int {
	p := partition(ops)
	// Reads by start; suffix minima: of a found read's source's return (sources known to be
	// acknowledged only), and of a missing read's return.
	sort.Slice(p.reads, func(i, j int) bool { return p.reads[i].Call < p.reads[j].Call })
	n := len(p.reads)
	minSource, minMissing := make([]int64, n+1), make([]int64, n+1)
	minSource[n], minMissing[n] = math.MaxInt64, math.MaxInt64
	for i := n - 1; i >= 0; i-- {
		r := p.reads[i]
		minSource[i], minMissing[i] = minSource[i+1], minMissing[i+1]
		if !r.Output.Found {
			minMissing[i] = min(minMissing[i], r.Return)
		} else if src, ok := p.writer[r.Output.Value]; ok && !src.Output.Unknown {
			minSource[i] = min(minSource[i], src.Return)
		}
	}
	// Deletes by when they answered; suffix minimum of their start.
	sort.Slice(p.deletes, func(i, j int) bool { return returned(p.deletes[i]) < returned(p.deletes[j]) })
	m := len(p.deletes)
	minDeleteCall := make([]int64, m+1)
	minDeleteCall[m] = math.MaxInt64
	for i := m - 1; i >= 0; i-- {
		minDeleteCall[i] = min(minDeleteCall[i+1], p.deletes[i].Call)
	}
	lost := 0
	for _, w := range p.acked {
		later := sort.Search(n, func(i int) bool { return p.reads[i].Call > w.Return })
		// A read after w saw a value whose write was over before w began.
		if minSource[later] < w.Call {
			lost++
			continue
		}
		if w.Input.Kind == Delete {
			continue
		}
		// A read after w found no key, and no delete that may fall between them (one still
		// running when w began, and begun before the read ended) explains it.
		d := sort.Search(m, func(i int) bool { return returned(p.deletes[i]) > w.Call })
		if minMissing[later] != math.MaxInt64 && minMissing[later] <= minDeleteCall[d] {
			lost++
		}
	}
	return lost
}

// keyOps are one key's operations as LostWrites looks at them.
type keyOps struct {
	writer       map[string]Op // values are unique per write, so a read names its write
	acked, reads []Op
	deletes      []Op // every delete that did not fail (an unknown one may have applied)
}

func partition(ops []Op) keyOps {
	p := keyOps{writer: map[string]Op{}}
	for _, op := range ops {
		switch {
		case op.Output.Failed:
		case op.Input.Kind == Get:
			if !op.Output.Unknown {
				p.reads = append(p.reads, op)
			}
		case op.Input.Kind == Put || op.Input.Kind == CAS:
			p.writer[op.Input.Value] = op
			if !op.Output.Unknown && (op.Input.Kind == Put || op.Output.OK) {
				p.acked = append(p.acked, op)
			}
		case op.Input.Kind == Delete:
			p.deletes = append(p.deletes, op)
			if !op.Output.Unknown {
				p.acked = append(p.acked, op)
			}
		}
	}
	return p
}

// returned is when an operation answered; never, for one whose outcome is unknown.
func returned(op Op) int64 {
	if op.Output.Unknown {
		return math.MaxInt64
	}
	return op.Return
}
