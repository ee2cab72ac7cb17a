package snapshot

import (
	"strings"
	"testing"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
)

func TestArtifactNames(t *testing.T) {
	for _, tc := range []struct{ prefix, key, subPath, path string }{
		{"", "nightly.db", "", "nightly.db"},
		{"/", "nightly.db", "/", "nightly.db"},
		{"backups", "backups/nightly.db", "backups", "backups/nightly.db"},
		{"backups/", "backups/nightly.db", "backups/", "backups/nightly.db"},
		{"/a/b/", "a/b/nightly.db", "/a/b/", "a/b/nightly.db"},
		{"", "nightly.db", "a/../..", "nightly.db"},
		{"", "nightly.db", "./x//y", "x/y/nightly.db"},
	} {
		if got := v1alpha2.SnapshotObjectKey(tc.prefix, "nightly.db"); got != tc.key {
			t.Errorf("ObjectKey(%q) = %q, want %q", tc.prefix, got, tc.key)
		}
		got := v1alpha2.SnapshotFilePath(tc.subPath, "nightly.db")
		if got != tc.path {
			t.Errorf("ClaimPath(%q) = %q, want %q", tc.subPath, got, tc.path)
		}
		if err := ValidateClaimPath(got); err != nil {
			t.Errorf("ClaimPath(%q) = %q is not valid: %v", tc.subPath, got, err)
		}
	}
}

func TestParseURI(t *testing.T) {
	for _, tc := range []struct {
		uri  string
		want Location
		ok   bool
	}{
		{"s3://bkt/a/b.db", Location{DestS3, "bkt", "a/b.db"}, true},
		{"s3://bkt//leading-slash.db", Location{DestS3, "bkt", "/leading-slash.db"}, true},
		{"pvc://backups/x/y.db", Location{DestPVC, "backups", "x/y.db"}, true},
		{"pvc://my.claim-1/y.db", Location{DestPVC, "my.claim-1", "y.db"}, true},
		{"s3://bkt", Location{}, false},
		{"s3://bkt/", Location{}, false},
		{"s3:///key", Location{}, false},
		{"s3://bkt/" + strings.Repeat("k", 1025), Location{}, false},
		{"s3://bkt/\xff", Location{}, false},
		{"pvc://backups/../y.db", Location{}, false},
		{"pvc://backups//y.db", Location{}, false},
		{"pvc://backups/a/./y.db", Location{}, false},
		{"pvc://Backups/y.db", Location{}, false},
		{"pvc://-x/y.db", Location{}, false},
		{"pvc://x-/y.db", Location{}, false},
		{"pvc://backups/", Location{}, false},
		{"file:///snapshot/data/x.db", Location{}, false},
		{"", Location{}, false},
	} {
		got, err := ParseURI(tc.uri)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("ParseURI(%q) = %+v, %v; want %+v ok=%v", tc.uri, got, err, tc.want, tc.ok)
			continue
		}
		if tc.ok && got.String() != tc.uri {
			t.Errorf("%q does not round-trip: %q", tc.uri, got.String())
		}
	}
}

func TestValidateFileName(t *testing.T) {
	for name, ok := range map[string]bool{"x.db": true, ".x": true, "": false, ".": false, "..": false, "a/b": false} {
		if (ValidateFileName(name) == nil) != ok {
			t.Errorf("ValidateFileName(%q): want ok=%v", name, ok)
		}
	}
}
