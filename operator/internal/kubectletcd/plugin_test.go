package kubectletcd

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestCodeOf(t *testing.T) {
	gr := schema.GroupResource{Group: "etcd-operator.cozystack.io", Resource: "etcdclusters"}
	for _, tc := range []struct {
		err  error
		want int
	}{
		{nil, ExitOK},
		{errors.New("etcd refused"), ExitFailed},
		{Errorf(ExitUnhealthy, "no leader"), ExitUnhealthy},
		{fmt.Errorf("wrapped: %w", Errorf(ExitAborted, "no")), ExitAborted},
		{apierrors.NewNotFound(gr, "x"), ExitNotFound},
		{apierrors.NewForbidden(gr, "x", errors.New("rbac")), ExitForbidden},
		{apierrors.NewUnauthorized("who"), ExitForbidden},
	} {
		if got := CodeOf(tc.err); got != tc.want {
			t.Errorf("CodeOf(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1024: "1.0 KiB", 1536: "1.5 KiB", 20 << 20: "20.0 MiB", 3 << 30: "3.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestPrint(t *testing.T) {
	v := map[string]int{"members": 3}
	table := func(w io.Writer) { fmt.Fprintln(w, "A\tBB\nccc\td") }
	for format, want := range map[string]string{
		OutputJSON:  "{\n  \"members\": 3\n}\n",
		OutputYAML:  "members: 3\n",
		OutputTable: "A    BB\nccc  d\n",
	} {
		var out bytes.Buffer
		if err := Print(&out, format, v, table); err != nil || out.String() != want {
			t.Errorf("%s: %q %v, want %q", format, out.String(), err, want)
		}
	}
	if err := CheckFormat("xml"); CodeOf(err) != ExitUsage {
		t.Errorf("xml: %v", err)
	}
}

func TestConfirm(t *testing.T) {
	for _, tc := range []struct {
		yes    bool
		answer string
		want   int
	}{
		{true, "", ExitOK}, {false, "y\n", ExitOK}, {false, "YES\n", ExitOK},
		{false, "n\n", ExitAborted}, {false, "", ExitAborted}, {false, "sure\n", ExitAborted},
	} {
		var errOut bytes.Buffer
		o := &Options{Yes: tc.yes, IOStreams: genericiooptions.IOStreams{In: strings.NewReader(tc.answer), ErrOut: &errOut}}
		if got := CodeOf(o.Confirm("Go?")); got != tc.want {
			t.Errorf("yes=%v answer %q: exit %d, want %d", tc.yes, tc.answer, got, tc.want)
		}
		if asked := strings.Contains(errOut.String(), "Go? [y/N]"); asked == tc.yes {
			t.Errorf("yes=%v: asked %v", tc.yes, asked)
		}
	}
}
