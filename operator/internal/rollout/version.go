package rollout

import (
	"fmt"
	"strconv"
	"strings"
)

// VersionSkew says why no member may be restarted into target while members run the
// versions running, or "" when it may: etcd joins a member at most one minor above the
// cluster's version, and below it only one minor, once etcd's own downgrade to that minor is
// enabled and every member's storage has been migrated to it (downgradeReady is that minor,
// e.g. "3.5", or ""). spec.version's CEL rule checks each edit against the previous one; this
// catches edits that together skip a minor before the first rollout ended (3.5 → 3.6, then 3.7
// while members still run 3.5). Unparseable versions are not judged.
func VersionSkew(target string, running []string, downgradeReady string) string {
	tMajor, tMinor, ok := majorMinor(target)
	if !ok {
		return ""
	}
	for _, v := range running {
		major, minor, ok := majorMinor(v)
		switch {
		case !ok:
		case major != tMajor || tMinor > minor+1:
			return fmt.Sprintf("a member runs etcd %s: %s would skip a minor version; set spec.version back to one minor above %d.%d until every member runs it", v, target, major, minor)
		case tMinor < minor-1:
			return fmt.Sprintf("a member runs etcd %s: %s would downgrade it by more than one minor; etcd downgrades one minor at a time", v, target)
		case tMinor == minor-1 && downgradeReady != fmt.Sprintf("%d.%d", tMajor, tMinor):
			return fmt.Sprintf("a member runs etcd %s: %s is a downgrade, which waits for etcd's downgrade to %d.%d to be enabled and every member's storage migrated", v, target, tMajor, tMinor)
		}
	}
	return ""
}

func majorMinor(v string) (int, int, bool) {
	parts := strings.Split(strings.TrimPrefix(v, "v"), ".")
	if len(parts) < 2 {
		return 0, 0, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	return major, minor, err1 == nil && err2 == nil
}
