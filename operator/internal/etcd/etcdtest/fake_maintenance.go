package etcdtest

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
)

// DefaultQuota is what Status reports as every member's quota until SetQuota: etcd's default
// --quota-backend-bytes.
const DefaultQuota = 2 << 30

// dbSize is one member's backend database: its size on disk and the part holding data.
type dbSize struct{ size, inUse int64 }

// SetDBSize sets what Status reports as a member's database size and the part of it in use
// (both 0 until set).
func (c *FakeCluster) SetDBSize(id uint64, size, inUse int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dbSizes[id] = dbSize{size: size, inUse: inUse}
}

// DBSize is a member's database size and the part in use, as Status reports them.
func (c *FakeCluster) DBSize(id uint64) (size, inUse int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	db := c.dbSizes[id]
	return db.size, db.inUse
}

// SetQuota sets the quota every member reports (etcd's --quota-backend-bytes).
func (c *FakeCluster) SetQuota(bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.quota = bytes
}

// RaiseAlarm raises an alarm of type typ (etcd.AlarmNoSpace, etcd.AlarmCorrupt) for a member, as
// etcd does when its database reaches the quota. Raising an active alarm again changes nothing.
func (c *FakeCluster) RaiseAlarm(id uint64, typ string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	a := etcd.Alarm{MemberID: id, Type: typ}
	if !slices.Contains(c.alarms, a) {
		c.alarms = append(c.alarms, a)
	}
}

// Defragment gives back the member's free pages: its size becomes the size in use. A member
// that is down fails as it does for Status.
func (c *FakeCluster) Defragment(_ context.Context, endpoint string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("defrag"); err != nil {
		return err
	}
	m, err := c.serving(endpoint)
	if err != nil {
		return err
	}
	db := c.dbSizes[m.ID]
	c.dbSizes[m.ID] = dbSize{size: db.inUse, inUse: db.inUse}
	c.ops = append(c.ops, "defrag "+m.Name)
	return nil
}

func (c *FakeCluster) AlarmList(context.Context) ([]etcd.Alarm, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("alarm-list"); err != nil {
		return nil, err
	}
	return slices.Clone(c.alarms), nil
}

// AlarmDisarm clears one alarm. Like etcd, disarming an alarm that is not active succeeds (and
// logs nothing); an unknown type fails as package etcd's client refuses it.
func (c *FakeCluster) AlarmDisarm(_ context.Context, a etcd.Alarm) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("alarm-disarm"); err != nil {
		return err
	}
	if a.Type != etcd.AlarmNoSpace && a.Type != etcd.AlarmCorrupt {
		return fmt.Errorf("fake etcd: unknown alarm type %q", a.Type)
	}
	i := slices.Index(c.alarms, a)
	if i < 0 {
		return nil
	}
	c.alarms = slices.Delete(c.alarms, i, i+1)
	c.ops = append(c.ops, "alarm-disarm "+a.Type+" "+c.memberName(a.MemberID))
	return nil
}

// memberName is a member's name, or its ID once it has left. The caller holds c.mu.
func (c *FakeCluster) memberName(id uint64) string {
	if i := c.index(id); i >= 0 {
		return c.members[i].Name
	}
	return etcd.FormatID(id)
}

// Defragment is an admin call in etcd, made of the one member at endpoint.
func (s *fakeSession) Defragment(ctx context.Context, endpoint string) error {
	if err := s.check("auth-check"); err != nil {
		return err
	}
	if name := hostLabel(endpoint); !s.reachable(name, s.tls) {
		return fmt.Errorf("fake etcd: member %s does not serve %s clients", name, schemeName(s.tls))
	}
	return s.FakeCluster.Defragment(ctx, endpoint)
}

// AlarmList needs an authenticated user once auth is on, as in etcd (any user, not only root).
func (s *fakeSession) AlarmList(ctx context.Context) ([]etcd.Alarm, error) {
	if err := s.anonymousDenied(); err != nil {
		return nil, err
	}
	if err := s.unreachable(); err != nil {
		return nil, err
	}
	return s.FakeCluster.AlarmList(ctx)
}

// AlarmDisarm is an admin call in etcd.
func (s *fakeSession) AlarmDisarm(ctx context.Context, a etcd.Alarm) error {
	if err := s.check("auth-check"); err != nil {
		return err
	}
	if err := s.unreachable(); err != nil {
		return err
	}
	return s.FakeCluster.AlarmDisarm(ctx, a)
}

// Downgrade plays etcd's downgrade API: Validate accepts only the minor below the cluster's
// version with none in flight, Enable also turns the downgrade on (Status then reports it, and
// every member's storage as migrated at once), Cancel ends one in flight. Each is logged in Ops.
func (c *FakeCluster) Downgrade(_ context.Context, action, version string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := c.refused("downgrade"); err != nil {
		return err
	}
	c.ops = append(c.ops, "downgrade "+strings.ToLower(action)+" "+version)
	if action == etcd.DowngradeCancel {
		if c.downgradeTo == "" {
			return rpctypes.ErrGRPCNoInflightDowngrade
		}
		c.downgradeTo = ""
		return nil
	}
	var major, minor int
	if _, err := fmt.Sscanf(c.version, "%d.%d", &major, &minor); err != nil || version != fmt.Sprintf("%d.%d", major, minor-1) {
		return rpctypes.ErrGRPCInvalidDowngradeTargetVersion
	}
	if c.downgradeTo != "" {
		return rpctypes.ErrGRPCDowngradeInProcess
	}
	if action == etcd.DowngradeEnable {
		c.downgradeTo = version
	}
	return nil
}

// storageVersion is what Status reports: the downgrade's target once enabled, else the
// cluster's minor. The caller holds c.mu.
func (c *FakeCluster) storageVersion() string {
	if c.downgradeTo != "" {
		return c.downgradeTo + ".0"
	}
	var major, minor int
	if _, err := fmt.Sscanf(c.version, "%d.%d", &major, &minor); err != nil {
		return ""
	}
	return fmt.Sprintf("%d.%d.0", major, minor)
}
