package provider

import "testing"

func TestTailStart(t *testing.T) {
	data := []byte("a\nb\nc\n")
	cases := []struct {
		n    int
		want string
	}{{1, "c\n"}, {2, "b\nc\n"}, {3, "a\nb\nc\n"}, {10, "a\nb\nc\n"}}
	for _, tc := range cases {
		if got := string(data[TailStart(data, tc.n):]); got != tc.want {
			t.Errorf("tail %d = %q, want %q", tc.n, got, tc.want)
		}
	}
	noNewline := []byte("x\ny")
	if got := string(noNewline[TailStart(noNewline, 1):]); got != "y" {
		t.Errorf("tail of unterminated line = %q", got)
	}
}
