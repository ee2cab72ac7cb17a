package rollout

import (
	"fmt"
	"strconv"
	"strings"
)

// VersionSkew says why no member may be restarted into target while members run the
// versions running, or "" when it may: etcd joins a member at most one minor above the
// cluster's version and never below it. spec.version's CEL rule checks each edit against the
// previous one; this catches edits that together skip a minor before the first rollout ended
// (3.5 → 3.6, then 3.7 while members still run 3.5). Unparseable versions are not judged.
func VersionSkew(target string, running []string) string {
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
		case tMinor < minor:
			return fmt.Sprintf("a member runs etcd %s: %s would downgrade it, which is not supported", v, target)
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
