package etcdtest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"slices"

	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
)

// fakeAuth is the fake's auth store: users with passwords and roles, and the enabled switch.
type fakeAuth struct {
	enabled bool
	users   map[string]*fakeUser
}

type fakeUser struct {
	password   string
	noPassword bool
	roles      []string
}

// fakeSession is one client of a FakeCluster: the cluster plus the user it authenticated as
// ("" is anonymous). Once auth is on, etcd refuses an anonymous client's calls (but
// AuthStatus), and admin calls of a user without the root role.
type fakeSession struct {
	*FakeCluster
	user string
	tls  bool
}

// AuthEnabled reports whether auth is on in the fake.
func (c *FakeCluster) AuthEnabled() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.auth.enabled
}

// UserPassword is a user's current password and whether the user exists.
func (c *FakeCluster) UserPassword(name string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.auth.users[name]
	if !ok {
		return "", false
	}
	return u.password, true
}

// UserRoles is a copy of a user's roles.
func (c *FakeCluster) UserRoles(name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.auth.users[name]; ok {
		return slices.Clone(u.roles)
	}
	return nil
}

// SetPasswordBehindOperator changes a user's password as if someone ran etcdctl user passwd.
func (c *FakeCluster) SetPasswordBehindOperator(name, password string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.auth.users[name]; ok {
		u.password = password
	}
}

// UserHasNoPassword reports whether a user was added with etcd's NoPassword option.
func (c *FakeCluster) UserHasNoPassword(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	u, ok := c.auth.users[name]
	return ok && u.noPassword
}

func (c *FakeCluster) authenticate(user, password string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if user == "" || !c.auth.enabled {
		return nil // clientv3 treats "auth not enabled" as success
	}
	if u, ok := c.auth.users[user]; !ok || u.noPassword || u.password != password {
		return rpctypes.ErrAuthFailed
	}
	return nil
}

// knownUser is name when the fake has that user, else "" (anonymous; real etcd would refuse
// the unknown user's calls with a different error).
func (c *FakeCluster) knownUser(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.auth.users[name]; ok && name != "" {
		return name
	}
	return ""
}

// certificateUser is who etcd takes a client without a username for: the CN of its TLS
// client certificate, or nobody.
func certificateUser(cfg *tls.Config) string {
	if cfg == nil || len(cfg.Certificates) == 0 || len(cfg.Certificates[0].Certificate) == 0 {
		return ""
	}
	leaf, err := x509.ParseCertificate(cfg.Certificates[0].Certificate[0])
	if err != nil {
		return ""
	}
	return leaf.Subject.CommonName
}

// permitted is etcd's check for admin calls: with auth on, only a user with the root role.
// The caller holds c.mu.
func (c *FakeCluster) permitted(user string) error {
	if !c.auth.enabled {
		return nil
	}
	if user == "" {
		return rpctypes.ErrUserEmpty
	}
	if u, ok := c.auth.users[user]; !ok || !slices.Contains(u.roles, "root") {
		return rpctypes.ErrPermissionDenied
	}
	return nil
}

func (s *fakeSession) check(op string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refused(op); err != nil {
		return err
	}
	return s.permitted(s.user)
}

// unreachable: no member serves the session's scheme (e.g. plaintext once every member
// serves TLS only).
func (s *fakeSession) unreachable() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.members {
		if s.reachable(m.Name, s.tls) {
			return nil
		}
	}
	if len(s.members) == 0 {
		return nil
	}
	return fmt.Errorf("fake etcd: no member serves %s clients", schemeName(s.tls))
}

func (s *fakeSession) MemberAddAsLearner(ctx context.Context, peerURL string) (etcd.Member, error) {
	if err := s.check("auth-check"); err != nil {
		return etcd.Member{}, err
	}
	return s.FakeCluster.MemberAddAsLearner(ctx, peerURL)
}

func (s *fakeSession) MemberPromote(ctx context.Context, id uint64) error {
	if err := s.check("auth-check"); err != nil {
		return err
	}
	return s.FakeCluster.MemberPromote(ctx, id)
}

func (s *fakeSession) MemberRemove(ctx context.Context, id uint64) error {
	if err := s.check("auth-check"); err != nil {
		return err
	}
	return s.FakeCluster.MemberRemove(ctx, id)
}

func (s *fakeSession) MoveLeader(ctx context.Context, id uint64) error {
	if err := s.check("auth-check"); err != nil {
		return err
	}
	return s.FakeCluster.MoveLeader(ctx, id)
}

func (s *fakeSession) Status(ctx context.Context, endpoint string) (etcd.EndpointStatus, error) {
	if err := s.check("auth-check"); err != nil {
		return etcd.EndpointStatus{}, err
	}
	if name := hostLabel(endpoint); !s.reachable(name, s.tls) {
		return etcd.EndpointStatus{}, fmt.Errorf("fake etcd: member %s does not serve %s clients", name, schemeName(s.tls))
	}
	return s.FakeCluster.Status(ctx, endpoint)
}

// etcd.MemberList needs an authenticated user once auth is on, as in etcd 3.6+.
func (s *fakeSession) MemberList(ctx context.Context) (etcd.MemberList, error) {
	if err := s.anonymousDenied(); err != nil {
		return etcd.MemberList{}, err
	}
	if err := s.unreachable(); err != nil {
		return etcd.MemberList{}, err
	}
	return s.FakeCluster.MemberList(ctx)
}

// anonymousDenied is etcd's refusal of a call without credentials once auth is on, for the calls
// any authenticated user may make.
func (s *fakeSession) anonymousDenied() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.auth.enabled && s.user == "" {
		return rpctypes.ErrUserEmpty
	}
	return nil
}

// AuthStatus is open to anyone, as in etcd.
func (s *fakeSession) AuthStatus(context.Context) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refused("auth"); err != nil {
		return false, err
	}
	return s.auth.enabled, nil
}

func (s *fakeSession) AuthEnable(context.Context) error {
	if err := s.check("auth"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if u, ok := s.auth.users["root"]; !ok || !slices.Contains(u.roles, "root") {
		return rpctypes.ErrRootUserNotExist
	}
	if !s.auth.enabled {
		s.auth.enabled = true
		s.ops = append(s.ops, "auth-enable"+s.plaintextMark())
	}
	return nil
}

func (s *fakeSession) UserAdd(_ context.Context, name, password string) error {
	if err := s.check("auth"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.auth.users[name]; ok {
		return rpctypes.ErrUserAlreadyExist
	}
	if s.auth.users == nil {
		s.auth.users = map[string]*fakeUser{}
	}
	s.auth.users[name] = &fakeUser{password: password}
	s.ops = append(s.ops, "user-add "+name+s.plaintextMark())
	return nil
}

func (s *fakeSession) UserAddNoPassword(ctx context.Context, name string) error {
	if err := s.UserAdd(ctx, name, ""); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth.users[name].noPassword = true
	return nil
}

func (s *fakeSession) UserChangePassword(_ context.Context, name, password string) error {
	return s.onUser(name, func(u *fakeUser) {
		u.password = password
		s.ops = append(s.ops, "user-passwd "+name+s.plaintextMark())
	})
}

func (s *fakeSession) UserGrantRole(_ context.Context, name, role string) error {
	return s.onUser(name, func(u *fakeUser) {
		if !slices.Contains(u.roles, role) {
			u.roles = append(u.roles, role)
		}
	})
}

// onUser changes an existing user under the lock, as an authenticated auth RPC.
func (s *fakeSession) onUser(name string, change func(*fakeUser)) error {
	if err := s.check("auth"); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.auth.users[name]
	if !ok {
		return rpctypes.ErrUserNotFound
	}
	change(u)
	return nil
}

// EnableAuthBehindOperator turns auth on with a root user, as `etcdctl auth enable` would (or
// data restored from a snapshot taken with auth on).
func (c *FakeCluster) EnableAuthBehindOperator(rootPassword string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.auth.users == nil {
		c.auth.users = map[string]*fakeUser{}
	}
	c.auth.users["root"] = &fakeUser{password: rootPassword, roles: []string{"root"}}
	c.auth.enabled = true
}

// plaintextMark tags the log entry of an auth call made over plaintext, which a test of a TLS
// cluster must never see.
func (s *fakeSession) plaintextMark() string {
	if s.tls {
		return ""
	}
	return " (plaintext)"
}
