package snapshot

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestEncodeResults(t *testing.T) {
	at := time.Date(2026, 9, 1, 10, 0, 0, 123, time.FixedZone("x", 3600))
	for _, tc := range []struct {
		name string
		got  []byte
		want string
	}{
		{"snapshot complete", EncodeSnapshot(SnapshotResult{
			Phase: PhaseComplete, URI: "s3://b/k.db", SizeBytes: 20512, Checksum: "sha256:ab", Member: "c-1",
			MemberID: FormatID(0x1234), ClusterID: FormatID(0xfedcba9876543210), Revision: 42, EtcdVersion: "3.6.16",
			StartTime: FormatTime(at), CompletionTime: FormatTime(at.Add(time.Minute)),
		}), `{"phase":"Complete","uri":"s3://b/k.db","sizeBytes":20512,"checksum":"sha256:ab","member":"c-1",` +
			`"memberID":"0000000000001234","clusterID":"fedcba9876543210","revision":42,"etcdVersion":"3.6.16",` +
			`"startTime":"2026-09-01T09:00:00.000000123Z","completionTime":"2026-09-01T09:01:00.000000123Z"}` + "\n"},
		{"snapshot failed", EncodeSnapshot(SnapshotResult{Phase: PhaseFailed, Reason: ReasonArtifactExists, Message: `"x" exists`}),
			`{"phase":"Failed","reason":"ArtifactExists","message":"\"x\" exists"}` + "\n"},
		{"restored", EncodeRestore(RestoreResult{Phase: PhaseRestored, Revision: 7, SizeBytes: 9, Checksum: "sha256:cd"}),
			`{"phase":"Restored","revision":7,"sizeBytes":9,"checksum":"sha256:cd"}` + "\n"},
		{"skipped", EncodeRestore(RestoreResult{Phase: PhaseSkipped}), `{"phase":"Skipped"}` + "\n"},
		{"restore failed", EncodeRestore(RestoreResult{Phase: PhaseFailed, Reason: ReasonSnapshotNewerThanTarget, Message: "m"}),
			`{"phase":"Failed","reason":"SnapshotNewerThanTarget","message":"m"}` + "\n"},
	} {
		if string(tc.got) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, tc.got, tc.want)
		}
	}
}

// Long messages are cut so the line fits a termination message, whatever they are made of.
func TestEncodeBounded(t *testing.T) {
	for _, msg := range []string{
		strings.Repeat("a", 10_000),
		strings.Repeat("ü€😀", 2_000),
		strings.Repeat(`"\<>&`, 2_000), // JSON escapes grow these up to six-fold
		strings.Repeat("\x01", 3_000),
		strings.Repeat("a", 4_100),
	} {
		line := EncodeSnapshot(SnapshotResult{Phase: PhaseFailed, Reason: ReasonFailed, Message: msg})
		if len(line) > MaxResultBytes || len(line) < MaxResultBytes-8 {
			t.Errorf("message of %d bytes: line of %d bytes, want just under %d", len(msg), len(line), MaxResultBytes)
		}
		r, err := ParseSnapshot(string(line))
		if err != nil || r.Reason != ReasonFailed || !utf8.ValidString(r.Message) || !strings.HasSuffix(r.Message, ellipsis) {
			t.Errorf("message of %d bytes: parsed %v, %+v", len(msg), err, r)
		}
		if !strings.HasPrefix(msg, strings.TrimSuffix(r.Message, ellipsis)) {
			t.Errorf("the cut message is not a prefix of the original")
		}
	}
	short := EncodeRestore(RestoreResult{Phase: PhaseFailed, Reason: ReasonFailed, Message: "fits"})
	if !strings.Contains(string(short), `"message":"fits"`) {
		t.Errorf("a short message was changed: %s", short)
	}
}

func TestParseResults(t *testing.T) {
	for _, tc := range []struct {
		line string
		ok   bool
	}{
		{`{"phase":"Complete","uri":"s3://b/k","sizeBytes":1}`, true},
		{`{"phase":"Failed","reason":"NoSpace","message":"m"}` + "\n", true},
		{`{"phase":"Restored"}`, false},
		{`not json`, false},
		{``, false},
	} {
		if _, err := ParseSnapshot(tc.line); (err == nil) != tc.ok {
			t.Errorf("ParseSnapshot(%q): %v, want ok=%v", tc.line, err, tc.ok)
		}
	}
	for line, ok := range map[string]bool{`{"phase":"Skipped"}`: true, `{"phase":"Restored","revision":3}`: true, `{"phase":"Complete"}`: false} {
		if _, err := ParseRestore(line); (err == nil) != ok {
			t.Errorf("ParseRestore(%q): %v, want ok=%v", line, err, ok)
		}
	}
}

func TestRedactor(t *testing.T) {
	r := NewRedactor("s3cr3t", "", "s3cr3t-longer", "p")
	got := r.Clean("pw s3cr3t-longer and s3cr3t, p")
	if strings.Contains(got, "s3cr3t") || strings.Contains(got, "longer") || strings.Contains(got, "p") {
		t.Errorf("Clean left a secret: %q", got)
	}
	var none *Redactor
	if none.Clean("x") != "x" {
		t.Error("a nil Redactor must pass text through")
	}
}

func TestReasons(t *testing.T) {
	base := errors.New("boom")
	if ReasonOf(base) != ReasonFailed || ReasonOf(WithReason(ReasonNoSpace, base)) != ReasonNoSpace {
		t.Error("WithReason/ReasonOf")
	}
	if ReasonOf(WithReason(ReasonFailed, Fail(ReasonAccessDenied, "x"))) != ReasonAccessDenied {
		t.Error("WithReason must keep an existing reason")
	}
	if WithReason(ReasonFailed, nil) != nil {
		t.Error("WithReason(nil)")
	}
	if b, _ := json.Marshal(ReasonEtcdUnreachable); string(b) != `"EtcdUnreachable"` {
		t.Error(string(b))
	}
}
