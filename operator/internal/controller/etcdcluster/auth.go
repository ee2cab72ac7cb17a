package etcdcluster

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/authcred"
	"github.com/cozystack/etcd-operator/operator/internal/crashpoint"
	"github.com/cozystack/etcd-operator/operator/internal/etcd"
	"github.com/cozystack/etcd-operator/operator/internal/resources"
	"github.com/cozystack/etcd-operator/operator/internal/topology"
)

// The owned <cluster>-operator-auth Secret is written; the root credentials Secret is labelled
// with its cluster so the label-restricted cache holds and watches it.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch

// authState is what the pass learned about etcd authentication.
type authState struct {
	// problem keeps auth from working; it becomes the Degraded condition.
	problem *metav1.Condition
	// asRoot: the pass dials as root, the operator's own user being unusable.
	asRoot bool
	// changed: auth was enabled or repaired; the next pass should come soon.
	changed bool
}

// ensureAuth turns etcd auth on once the cluster has formed and has quorum (its member list,
// a linearizable read, answered), keeps root's password equal to the Secret's, and keeps the
// operator's own user usable. A missing Secret is a condition, not an error: the pass goes on.
func (r *Reconciler) ensureAuth(ctx context.Context, st *clusterState) error {
	c := st.cluster
	if !authcred.Wanted(c) || st.auth.problem != nil || st.status.ClusterID == "" || st.etcd.list == nil || st.etcd.client == nil {
		return nil
	}
	if !st.etcd.dialedTLS {
		// Credentials must not cross plaintext: auth added together with client TLS waits
		// until every member serves TLS and the operator dials it (status.clientTLSServing).
		return nil
	}
	root, ok, err := r.readRootCredential(ctx, st)
	if !ok {
		return err
	}
	op, err := r.ensureOperatorSecret(ctx, c)
	if err != nil {
		return err
	}
	switch {
	case !st.status.AuthEnabled && plaintextListenerLeft(st):
		// Nor must anyone else's: while a member still accepts plaintext (client TLS being
		// enabled, step 2), a client could log in over it.
		return nil
	case !st.status.AuthEnabled:
		return r.enableAuth(ctx, st, root, op)
	case st.auth.asRoot:
		return r.repairOperatorUser(ctx, st, root, op)
	case !root.passwordless && op.RootHash != authcred.Hash(c, root.password):
		return r.rotateRoot(ctx, st, root.password)
	}
	return nil
}

// rootCredential is what root authenticates with: the password of spec.auth's Secret, or
// its client certificate alone (spec.auth.passwordlessRoot).
type rootCredential struct {
	password     string
	passwordless bool
}

// readRootCredential reads root's password (watching its Secret); ok is false when the pass must
// not go on with auth: a missing Secret or key is a condition (nil error), others are errors.
func (r *Reconciler) readRootCredential(ctx context.Context, st *clusterState) (rootCredential, bool, error) {
	c := st.cluster
	if authcred.Passwordless(c) {
		return rootCredential{passwordless: true}, true, nil
	}
	pw, sec, err := authcred.RootPassword(ctx, r.TLS, c)
	if sec != nil {
		if werr := r.watchSecret(ctx, c, sec); werr != nil {
			return rootCredential{}, false, werr
		}
	}
	if err != nil {
		r.authFailed(st, err)
		var missing *authcred.MissingError
		if errors.As(err, &missing) {
			return rootCredential{}, false, nil
		}
		return rootCredential{}, false, err
	}
	return rootCredential{password: pw}, true, nil
}

// addRoot creates root: with its password, or without one (reached by certificate only).
func addRoot(ctx context.Context, cli etcd.Client, root rootCredential) error {
	if !root.passwordless {
		return ensureUser(ctx, cli, v1alpha2.RootUser, root.password)
	}
	if err := cli.UserAddNoPassword(ctx, v1alpha2.RootUser); err != nil && !etcd.IsUserExists(err) {
		return fmt.Errorf("user %s: %w", v1alpha2.RootUser, err)
	}
	if err := cli.UserGrantRole(ctx, v1alpha2.RootUser, v1alpha2.RootRole); err != nil {
		return fmt.Errorf("grant role %s to %s: %w", v1alpha2.RootRole, v1alpha2.RootUser, err)
	}
	return nil
}

// rootHash is what the owned Secret records of root's applied password ("" when it has none).
func rootHash(c *v1alpha2.EtcdCluster, root rootCredential) string {
	if root.passwordless {
		return ""
	}
	return authcred.Hash(c, root.password)
}

// rootDescription says in an Event how root authenticates.
func rootDescription(c *v1alpha2.EtcdCluster) string {
	switch {
	case authcred.Passwordless(c):
		return "root has no password: it is reached only by a client certificate whose CN is root"
	case c.Spec.Auth == nil || c.Spec.Auth.RootCredentialsSecretRef == nil:
		return "spec.auth names no root credentials"
	}
	return fmt.Sprintf("root's password is the %q key of Secret %s", corev1.BasicAuthPasswordKey, c.Spec.Auth.RootCredentialsSecretRef.Name)
}

// plaintextListenerLeft: a member is asked to keep a plaintext client listener, or its Pod may
// still run one (it has not been restarted into its current template yet, or its status has not
// caught up with a template change).
func plaintextListenerLeft(st *clusterState) bool {
	for i := range st.members {
		m := &st.members[i]
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if (m.Spec.TLS != nil && m.Spec.TLS.ClientPlaintext) || topology.MemberOutdated(m) || !topology.StatusCurrent(m) {
			return true
		}
	}
	return false
}

// enableAuth creates root (with the Secret's password) and the operator's user, both with the
// root role, enables auth and latches status.authEnabled. Auth already on (a pass that died
// before the latch, or data restored with auth) is latched as it is; the next dial proves the
// credentials.
func (r *Reconciler) enableAuth(ctx context.Context, st *clusterState, root rootCredential, op authcred.Operator) error {
	c, cli := st.cluster, st.etcd.client
	on, err := cli.AuthStatus(ctx)
	if etcd.IsAuthRequired(err) {
		on, err = true, nil
	}
	if err != nil {
		return fmt.Errorf("AuthStatus: %w", err)
	}
	if !on {
		if err := addRoot(ctx, cli, root); err != nil {
			return err
		}
		if err := ensureUser(ctx, cli, op.Username, op.Password); err != nil {
			return err
		}
		crashpoint.Hit(crashpoint.AuthUsersCreated)
		if err := cli.AuthEnable(ctx); err != nil {
			return fmt.Errorf("AuthEnable: %w", err)
		}
		crashpoint.Hit(crashpoint.AuthEnabled)
		r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonAuthEnabled, "EnableAuth", "etcd authentication enabled; %s", rootDescription(c))
	}
	if err := r.saveRootHash(ctx, c, rootHash(c, root)); err != nil {
		return err
	}
	st.status.AuthEnabled, st.auth.changed = true, true
	// The rest of this pass acts with credentials: the anonymous client is refused from now on.
	if conn, err := r.Etcd.Dial(ctx, st.dialRequest()); err == nil {
		st.etcd.client, st.etcd.dialedTLS = conn.Client, conn.Target.TLS != nil
	}
	return nil
}

// repairOperatorUser (re)creates the operator's user with its Secret's password; the pass
// dialled as root, so root's password is the Secret's (or root has none).
func (r *Reconciler) repairOperatorUser(ctx context.Context, st *clusterState, root rootCredential, op authcred.Operator) error {
	if err := ensureUser(ctx, st.etcd.client, op.Username, op.Password); err != nil {
		return err
	}
	if err := r.saveRootHash(ctx, st.cluster, rootHash(st.cluster, root)); err != nil {
		return err
	}
	log.FromContext(ctx).Info("etcd user of the operator recreated", "user", op.Username)
	st.auth.changed = true
	return nil
}

// rotateRoot applies a changed Secret password to root. The operator's own user makes the
// change, so the old password is not needed.
func (r *Reconciler) rotateRoot(ctx context.Context, st *clusterState, rootPW string) error {
	c := st.cluster
	if err := st.etcd.client.UserChangePassword(ctx, v1alpha2.RootUser, rootPW); err != nil {
		return fmt.Errorf("change root's password: %w", err)
	}
	if err := r.saveRootHash(ctx, c, authcred.Hash(c, rootPW)); err != nil {
		return err
	}
	r.event(c, corev1.EventTypeNormal, v1alpha2.ReasonAuthPasswordChanged, "RotatePassword",
		"root's password in etcd changed to the one in Secret %s", c.Spec.Auth.RootCredentialsSecretRef.Name)
	return nil
}

// ensureUser makes a user exist with the password and the root role.
func ensureUser(ctx context.Context, cli etcd.Client, name, password string) error {
	err := cli.UserAdd(ctx, name, password)
	if etcd.IsUserExists(err) {
		err = cli.UserChangePassword(ctx, name, password)
	}
	if err != nil {
		return fmt.Errorf("user %s: %w", name, err)
	}
	if err := cli.UserGrantRole(ctx, name, v1alpha2.RootRole); err != nil {
		return fmt.Errorf("grant role %s to %s: %w", v1alpha2.RootRole, name, err)
	}
	return nil
}

// authFailed records why auth does not work: a missing Secret or key, or credentials etcd
// refuses. Other errors (API, network) are not auth problems. One Event when the cluster
// enters the state, not one per pass.
func (r *Reconciler) authFailed(st *clusterState, err error) {
	var missing *authcred.MissingError
	var reason, msg string
	switch {
	case errors.As(err, &missing):
		reason, msg = v1alpha2.ReasonAuthCredentialsMissing, missing.Message
	case etcd.IsAuthFailed(err):
		reason = v1alpha2.ReasonAuthCredentialsRejected
		msg = fmt.Sprintf("etcd refused the operator's user and root (%s): %v", rootDescription(st.cluster), err)
	default:
		return
	}
	c := cond(v1alpha2.ConditionDegraded, true, reason, "%s", msg)
	st.auth.problem = &c
	if st.memo.due(st.cluster, topicAuth, reason) {
		r.event(st.cluster, corev1.EventTypeWarning, reason, "Authenticate", "%s", msg)
	}
}

// watchSecret labels the root credentials Secret with its cluster, so the Secret cache (which
// holds only labelled Secrets) sees it and a password change triggers a pass. A Secret already
// labelled for another cluster is left alone.
func (r *Reconciler) watchSecret(ctx context.Context, c *v1alpha2.EtcdCluster, sec *corev1.Secret) error {
	if _, ok := sec.Labels[v1alpha2.LabelCluster]; ok {
		return nil
	}
	patch := client.MergeFrom(sec.DeepCopy())
	if sec.Labels == nil {
		sec.Labels = map[string]string{}
	}
	sec.Labels[v1alpha2.LabelCluster] = c.Name
	return client.IgnoreNotFound(r.Client.Patch(ctx, sec, patch))
}

// ensureOperatorSecret returns the operator's credentials, creating its Secret (with a random
// password) the first time.
func (r *Reconciler) ensureOperatorSecret(ctx context.Context, c *v1alpha2.EtcdCluster) (authcred.Operator, error) {
	op, ok, err := authcred.ReadOperator(ctx, r.TLS, c)
	if err != nil || ok {
		return op, err
	}
	op = authcred.Operator{Username: v1alpha2.OperatorUser, Password: authcred.NewPassword()}
	sec := resources.OperatorAuthSecret(c, authcred.OperatorSecretData(op))
	err = r.Client.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return op, err
	}
	// An incomplete Secret (edited by hand): complete it. etcd learns the new password when
	// the operator's dial fails and repairOperatorUser runs as root.
	got, err := r.TLS.Secret(ctx, c.Namespace, sec.Name)
	if err != nil {
		return op, err
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Data = sec.Data
	return op, r.Client.Patch(ctx, got, patch)
}

// saveRootHash records the hash of root's applied password in the owned Secret.
func (r *Reconciler) saveRootHash(ctx context.Context, c *v1alpha2.EtcdCluster, hash string) error {
	sec, err := r.TLS.Secret(ctx, c.Namespace, v1alpha2.OperatorAuthSecretName(c.Name))
	if err != nil {
		return err
	}
	if string(sec.Data[authcred.KeyRootHash]) == hash {
		return nil
	}
	patch := client.MergeFrom(sec.DeepCopy())
	if sec.Data == nil {
		sec.Data = map[string][]byte{}
	}
	sec.Data[authcred.KeyRootHash] = []byte(hash)
	return r.Client.Patch(ctx, sec, patch)
}
