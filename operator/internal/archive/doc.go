// Package archive is the pure core of continuous archiving: between full snapshots, every change
// of an etcd keyspace is kept as delta segments, so that a restore can reach any revision (or
// time) the archive covers, not only the last snapshot. The archiver that writes segments and the
// replay that applies them live in package agent (Archiver, DeltaRestore); this package names,
// encodes and reasons about them, and does no I/O beyond an io.Writer or io.Reader (so that a
// framing, compression and encryption, can wrap the bytes on their way to a store).
//
// # Naming
//
// A segment is stored under its cluster's prefix (which must be the cluster's alone, e.g. with
// its UID: revisions restart at 1 in a new cluster of the same name) as
//
//	<first revision>-<last revision>_<first ms>-<last ms>.seg
//
// revisions zero-padded to 19 digits and the archiver's Unix milliseconds to 13, so that names
// sort by first revision and a listing alone is enough to plan a restore (by revision or time)
// and retention. The name is an index; the header is authoritative.
//
// # Format (version 1)
//
// Big-endian throughout:
//
//	magic "ETCDSEG\x00", version uint16,
//	cluster ID uint64, member ID uint64 (the member the watch streamed from),
//	first int64, last int64, marks uint32, leases uint32, events uint32,
//	marks: (revision int64, Unix nanoseconds int64) each,
//	leases: (ID int64, granted TTL in seconds int64) each,
//	events: uvarint length + etcd's mvccpb.Event protobuf each (prev-kv included),
//	sha256 of everything above.
//
// Decode checks the magic, the version, the checksum and that nothing follows it, and then that
// the content is consistent (Segment.Validate): every revision from first to last has events
// (etcd gives each revision at least one, and the archiver watches the whole keyspace, so a
// missing revision is a lost change, not a quiet one), no revision changes a key twice, every
// lease a put carries is recorded, marks lie inside the range in order. Every failure wraps
// ErrCorrupt and names what is wrong.
//
// # Time
//
// etcd's events carry no time. The archiver records a Mark (revision, its wall clock) each time a
// watch response arrives: by that time it had seen every revision up to that one. A revision's
// time is that of the first mark at or after it, so it is late by the watch's delivery (a few
// milliseconds when the archiver keeps up; the archive lag when it does not) and never early. A
// restore to time T applies every revision whose time is at or before T: a write committed just
// before T but delivered after it is left out. Marks are as good as the archiver's clock; two
// archivers' clocks (after a restart on another node) may disagree by their skew. A time after
// the newest mark is refused rather than taken for "latest": the archive cannot say whether
// changes happened after its last mark.
//
// # Chains
//
// A chain is a full snapshot (Base, its revision R) and the segments that continue it without a
// hole: Analyze follows from R+1 the segment reaching furthest at each point, so overlaps (an
// archiver that restarted re-reads from the last complete segment it finds) and duplicates (two
// archivers after a crash wrote the same range) are harmless, each revision is applied once. A
// gap (a compaction outran the archiver, a segment was deleted) ends the chain: the revisions up
// to the next full snapshot are reported as Gaps, never skipped. PlanRestore picks the newest
// base whose chain holds the target (latest, a revision, a time) and the segments to apply, with
// the revisions to take from each.
//
// # Retention
//
// Expired keeps every point of a window reachable and deletes whole chains only: every base
// taken inside the window, the newest base taken before it (its chain reaches the window's
// start), the newest base whatever its age, and every segment a kept base can need; older bases
// and the segments that end at or before the oldest kept base go.
//
// # Leases
//
// A segment records, once, the ID and granted TTL of each lease its puts carry (the archiver
// asks etcd when it first sees the lease; a lease already gone is recorded with TTL 0). Restore
// grants each lease under its original ID with its granted TTL before the first put that carries
// it (a lease the base snapshot holds is kept), so keys keep their lease; the countdown restarts
// at the full TTL, as after any snapshot restore and leader change, and a lease with TTL 0 is
// granted agent.UnknownLeaseTTL. An expiry or revocation is archived as the deletes it caused, and
// replayed as such. Leases no key carries are not archived.
//
// # Restore and revisions
//
// The base is restored as a full restore does; the segments are then replayed into that etcd
// before anything else reaches it, one transaction per archived revision, so archived revision r
// becomes r+B, where B is the base's --bump-revision (0 without). The replay checks each
// transaction's revision against r+B, so a base at the wrong revision or a concurrent writer stops
// it. For an in-place rollback (B = v1alpha2.RollbackRevisionBump, with --mark-compacted) the
// combination keeps a kube-apiserver's watches and resourceVersions valid as a full restore
// does: every revision a client saw before (at most the lost cluster's newest, far below R+B) is
// compacted in the restored etcd, so its watches end with "compacted" and it relists; the
// replayed revisions R+B+1 … T+B lie above all of them and are the restored etcd's real history.
//
// # Bounds
//
// The archiver holds one segment in memory: at most its size limit plus one watch response
// (etcd ends a response at a revision boundary, at most 1000 revisions), and while a segment is
// being stored (encoded straight into the store's writer, never whole in memory), the store's
// upload buffer (S3: one part, snapshot.PartSize) and what clientv3 buffers of the watch meanwhile
// (the write rate times the upload time). A restore holds one decoded segment at a time.
package archive
