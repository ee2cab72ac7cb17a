package ociimage

import (
	"io/fs"
	"strconv"
)

// Host is where the host keeps what the base layer copies: Debian's ca-certificates bundle
// and tzdata, as the distroless images carry them.
type Host struct {
	CACertificates string
	ZoneInfo       string
}

// DebianHost is this machine's (Debian 12) ca-certificates and tzdata, where distroless has them too.
var DebianHost = Host{CACertificates: CACertificatesPath, ZoneInfo: ZoneInfoPath}

// The users of the distroless base (gcr.io/distroless/static): root, nobody and nonroot.
const (
	NonRootID = 65532
	nobodyID  = 65534
)

// The paths of the base layer, and the PATH of its images (distroless's, and etcd's images').
const (
	CACertificatesPath = "/etc/ssl/certs/ca-certificates.crt"
	ZoneInfoPath       = "/usr/share/zoneinfo"
	DefaultPath        = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// DistrolessBase is the base image of the Dockerfile's operator stage, whose content
// BaseLayer reproduces (the Dockerfile test fails when the Dockerfile names another).
const DistrolessBase = "gcr.io/distroless/static:nonroot"

// BaseLayer is what the distroless static image gives the programs the Dockerfile and
// etcd's release images put on it: root, nobody and nonroot(65532) in /etc/passwd and
// /etc/group, their home folders, /tmp (1777), the CA certificates (the snapshot agent talks
// to S3 over HTTPS) and the time zones (backup and defrag schedules name one).
func BaseLayer(h Host) (LayerSpec, error) {
	zones, err := HostTree(ZoneInfoPath, h.ZoneInfo)
	if err != nil {
		return LayerSpec{}, err
	}
	nonroot, nobody := strconv.Itoa(NonRootID), strconv.Itoa(nobodyID)
	entries := append([]Entry{
		File("/etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/sbin/nologin\n"+
			"nobody:x:"+nobody+":"+nobody+":nobody:/nonexistent:/sbin/nologin\n"+
			"nonroot:x:"+nonroot+":"+nonroot+":nonroot:/home/nonroot:/sbin/nologin\n")),
		File("/etc/group", 0o644, []byte("root:x:0:\nnobody:x:"+nobody+":\nnonroot:x:"+nonroot+":\n")),
		File("/etc/nsswitch.conf", 0o644, []byte("hosts: files dns\n")),
		Dir("/root", 0o700),
		Dir("/home/nonroot", 0o700).Owned(NonRootID, NonRootID),
		Dir("/tmp", 0o777|fs.ModeSticky),
		HostFile(CACertificatesPath, 0o644, h.CACertificates),
	}, zones...)
	return LayerSpec{CreatedBy: "distroless static base (passwd, group, nsswitch.conf, homes, /tmp, ca-certificates, tzdata)", Entries: entries}, nil
}
