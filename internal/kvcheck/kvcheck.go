// Package kvcheck checks that a history of key-value operations against etcd is linearizable,
// with porcupine and a model of etcd's semantics for the operations the e2e workload issues:
// put, get, delete and compare-and-swap (a transaction: if the key holds Expect, put Value).
// An operation whose outcome is unknown (a timeout, a cut connection) may or may not have
// taken effect; the model allows both. Histories are partitioned by key.
package kvcheck

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind of operation.
type Kind string

const (
	Put    Kind = "put"
	Get    Kind = "get"
	Delete Kind = "delete"
	CAS    Kind = "cas"
)

// Input is an operation as invoked. Values are unique per write, so a read names its write.
type Input struct {
	Kind   Kind
	Key    string
	Value  string // Put, CAS: the value written
	Expect string // CAS: the value the key must hold
}

// Output is what the operation returned.
type Output struct {
	// Unknown: no answer (timeout, connection cut): it may or may not have taken effect.
	Unknown bool
	// Failed: etcd refused it before it could take effect (nothing applied).
	Failed bool
	Found  bool   // Get: the key exists
	Value  string // Get: its value
	OK     bool   // CAS: the comparison held and the put was applied
}

// Op is one recorded operation; Call and Return are nanoseconds on one monotonic clock.
type Op struct {
	Client       int
	Input        Input
	Output       Output
	Call, Return int64
}

type state struct {
	exists bool
	value  string
}

// Model is etcd's key-value semantics for one key.
var Model = porcupine.NondeterministicModel{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range history {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []any { return []any{state{}} },
	Step: func(s, in, out any) []any {
		st, i, o := s.(state), in.(Input), out.(Output)
		if o.Failed {
			return []any{st}
		}
		after := apply(st, i)
		if o.Unknown {
			if after == st {
				return []any{st}
			}
			return []any{st, after}
		}
		switch i.Kind {
		case Get:
			if o.Found != st.exists || (o.Found && o.Value != st.value) {
				return nil
			}
		case CAS:
			if o.OK != (st.exists && st.value == i.Expect) {
				return nil
			}
		}
		return []any{after}
	},
	DescribeOperation: func(in, out any) string {
		i, o := in.(Input), out.(Output)
		switch {
		case o.Unknown:
			return fmt.Sprintf("%s(%s) -> ?", i.Kind, describe(i))
		case o.Failed:
			return fmt.Sprintf("%s(%s) -> refused", i.Kind, describe(i))
		case i.Kind == Get && !o.Found:
			return fmt.Sprintf("get(%s) -> none", i.Key)
		case i.Kind == Get:
			return fmt.Sprintf("get(%s) -> %s", i.Key, o.Value)
		case i.Kind == CAS:
			return fmt.Sprintf("cas(%s) -> %v", describe(i), o.OK)
		}
		return fmt.Sprintf("%s(%s)", i.Kind, describe(i))
	},
	DescribeState: func(s any) string {
		if st := s.(state); st.exists {
			return st.value
		}
		return "(none)"
	},
}

func describe(i Input) string {
	switch i.Kind {
	case Put:
		return i.Key + "=" + i.Value
	case CAS:
		return i.Key + ": " + i.Expect + " -> " + i.Value
	}
	return i.Key
}

// apply is the state after an operation that took effect.
func apply(s state, i Input) state {
	switch i.Kind {
	case Put:
		return state{exists: true, value: i.Value}
	case Delete:
		return state{}
	case CAS:
		if s.exists && s.value == i.Expect {
			return state{exists: true, value: i.Value}
		}
	}
	return s
}

// Result of a check.
type Result struct {
	Linearizable bool
	// Unknown: the checker ran out of time; nothing is proven either way.
	TimedOut bool
	// Visualization is the HTML file written for a history that is not linearizable.
	Visualization string
}

// Check checks ops within timeout; a history that is not linearizable is visualized into dir.
// An operation with an unknown outcome stays open to the end of the history: it may have
// taken effect at any time after its call.
func Check(ops []Op, timeout time.Duration, dir string) (Result, error) {
	history := make([]porcupine.Operation, len(ops))
	for i, op := range ops {
		ret := op.Return
		if op.Output.Unknown {
			ret = math.MaxInt64
		}
		history[i] = porcupine.Operation{ClientId: op.Client, Input: op.Input, Output: op.Output, Call: op.Call, Return: ret}
	}
	model := Model.ToModel()
	res, info := porcupine.CheckOperationsVerbose(model, history, timeout)
	out := Result{Linearizable: res == porcupine.Ok, TimedOut: res == porcupine.Unknown}
	if res == porcupine.Illegal && dir != "" {
		out.Visualization = filepath.Join(dir, "linearizability.html")
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return out, err
		}
		if err := porcupine.VisualizePath(model, info, out.Visualization); err != nil {
			return out, err
		}
	}
	return out, nil
}
