package kvcheck

import "math"

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

// lostOnKey is LostWrites for the operations on one key.
func lostOnKey(ops []Op) int {
	writer := map[string]Op{} // values are unique per write, so a read names its write
	var acked, reads []Op
	for _, op := range ops {
		switch {
		case op.Output.Failed:
		case op.Input.Kind == Get:
			if !op.Output.Unknown {
				reads = append(reads, op)
			}
		case op.Input.Kind == Put || op.Input.Kind == CAS:
			writer[op.Input.Value] = op
			if !op.Output.Unknown && (op.Input.Kind == Put || op.Output.OK) {
				acked = append(acked, op)
			}
		case op.Input.Kind == Delete && !op.Output.Unknown:
			acked = append(acked, op)
		}
	}
	lost := 0
	for _, w := range acked {
		for _, r := range reads {
			if r.Call > w.Return && contradicts(r, w, ops, writer) {
				lost++
				break
			}
		}
	}
	return lost
}

// contradicts: read r, which began after w was acknowledged, cannot have come after w.
func contradicts(r, w Op, ops []Op, writer map[string]Op) bool {
	if r.Output.Found {
		// r saw the value of a write that was over before w began: w was lost. (r seeing
		// w's own value, or that of a write that may follow w, is fine.)
		src, ok := writer[r.Output.Value]
		return ok && src.Input.Value != w.Input.Value && !src.Output.Unknown && src.Return < w.Call
	}
	if w.Input.Kind == Delete {
		return false
	}
	// r saw no key after w wrote one: only a delete that may come between them explains it.
	for _, d := range ops {
		if d.Input.Kind == Delete && !d.Output.Failed && d.Call < r.Return && returned(d) > w.Call {
			return false
		}
	}
	return true
}

// returned is when an operation answered; never, for one whose outcome is unknown.
func returned(op Op) int64 {
	if op.Output.Unknown {
		return math.MaxInt64
	}
	return op.Return
}
