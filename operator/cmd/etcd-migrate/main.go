// Command etcd-migrate adopts a cluster of the legacy etcd.aenix.io/v1alpha1 operator in place:
// the running Pods and volumes become an EtcdCluster of this operator without a restart. It is
// a dry run unless --apply is given.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/cozystack/etcd-operator/operator/api/v1alpha2"
	"github.com/cozystack/etcd-operator/operator/internal/kubectletcd"
	"github.com/cozystack/etcd-operator/operator/internal/migrate"
)

// Exit codes: scripts tell a cluster that cannot be adopted from a run that failed.
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitBlocked = 3
	exitAborted = 4
)

type options struct {
	kubectletcd.Options
	apply, skipBackup, skipControllerCheck bool
	backupFile, legacyController           string
	newController, newControllerLease      string
	timeout                                time.Duration
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}, os.Args[1:])
	stop()
	os.Exit(code)
}

type codeError struct {
	code int
	err  error
}

func (e *codeError) Error() string { return e.err.Error() }

func execute(ctx context.Context, streams genericiooptions.IOStreams, args []string) int {
	cmd := newRoot(streams)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(streams.ErrOut, "error:", err)
	var ce *codeError
	var blocked *migrate.BlockedError
	switch {
	case errors.As(err, &ce):
		return ce.code
	case errors.As(err, &blocked):
		return exitBlocked
	}
	return exitFailed
}

func newRoot(streams genericiooptions.IOStreams) *cobra.Command {
	o := &options{Options: kubectletcd.Options{Kube: genericclioptions.NewConfigFlags(true), IOStreams: streams}}
	cmd := &cobra.Command{
		Use:   "etcd-migrate NAME",
		Short: "Adopt a legacy etcd.aenix.io/v1alpha1 EtcdCluster in place, without restarting its Pods",
		Long: "etcd-migrate reads a legacy EtcdCluster and its live etcd, and prints the EtcdCluster and EtcdMembers it\n" +
			"translates them into, every field it drops or that blocks the adoption, and the steps of the adoption.\n" +
			"With --apply it takes a verified snapshot, then adopts: Pods, volumes and Services are re-owned, the\n" +
			"StatefulSet and legacy CR are deleted with their dependents orphaned. Run again after a failure, it\n" +
			"completes the adoption; run after it, it changes nothing.\n\n" +
			"Exit codes: 0 done (or nothing blocks a dry run), 1 failed, 2 usage, 3 blocked (nothing changed), 4 declined.",
		Args:          cobra.ExactArgs(1),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          func(cmd *cobra.Command, args []string) error { return o.run(cmd.Context(), args[0]) },
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &codeError{code: exitUsage, err: err} })
	o.Kube.AddFlags(cmd.Flags())
	f := cmd.Flags()
	f.BoolVarP(&o.Yes, "yes", "y", false, "do not ask before --apply changes anything")
	f.BoolVar(&o.apply, "apply", false, "adopt the cluster (without it: a dry run that changes nothing)")
	f.StringVar(&o.backupFile, "backup-file", "", "write the verified snapshot taken before the adoption here (required with --apply unless --skip-backup)")
	f.BoolVar(&o.skipBackup, "skip-backup", false, "adopt without taking a snapshot first")
	f.StringVar(&o.legacyController, "legacy-controller", migrate.DefaultLegacyController.String(), "namespace/name of the legacy operator's Deployment")
	f.StringVar(&o.newController, "new-controller", migrate.DefaultNewController.String(), "namespace/name of this operator's Deployment")
	f.StringVar(&o.newControllerLease, "new-controller-lease", v1alpha2.DefaultLeaderElectionID,
		"the Lease this operator's replicas elect through, in the --new-controller namespace (its chart's leaderElectionID; aa20b3a9.etcd-operator.cozystack.io for the Cozystack package)")
	f.BoolVar(&o.skipControllerCheck, "skip-controller-check", false, "do not check that both operators are stopped")
	f.DurationVar(&o.timeout, "timeout", 2*time.Minute, "bound of each wait for a deletion")
	return cmd
}

func (o *options) run(ctx context.Context, name string) error {
	if err := o.validate(); err != nil {
		return err
	}
	c, cfg, ns, err := o.Client()
	if err != nil {
		return err
	}
	fwd, err := kubectletcd.NewForwarder(cfg)
	if err != nil {
		return err
	}
	defer fwd.Close()
	env := migrate.Env{Client: c, Dial: fwd.Dial}
	st, err := migrate.Inspect(ctx, env, ns, name)
	if err != nil {
		return err
	}
	t, names, err := migrate.Plan(st)
	if errors.Is(err, migrate.ErrAdopted) {
		fmt.Fprintf(o.Out, "%s/%s: %v. Nothing to do.\n", ns, name, err)
		return nil
	}
	if err != nil {
		return err
	}
	if !o.apply {
		if err := migrate.Render(o.Out, st, t, names); err != nil {
			return err
		}
		if t != nil && t.Findings.Blocked() {
			return &migrate.BlockedError{Findings: t.Findings}
		}
		return nil
	}
	return o.adopt(ctx, env, st)
}

func (o *options) validate() error {
	switch {
	case o.apply && o.backupFile == "" && !o.skipBackup:
		return &codeError{code: exitUsage, err: errors.New("--apply needs --backup-file (or an explicit --skip-backup)")}
	case o.skipBackup && o.backupFile != "":
		return &codeError{code: exitUsage, err: errors.New("--skip-backup and --backup-file exclude each other")}
	}
	for _, s := range []string{o.legacyController, o.newController} {
		if _, err := migrate.ParseController(s); err != nil {
			return &codeError{code: exitUsage, err: err}
		}
	}
	return nil
}

func (o *options) adopt(ctx context.Context, env migrate.Env, st *migrate.State) error {
	if !o.skipControllerCheck {
		legacyCtl, _ := migrate.ParseController(o.legacyController)
		newCtl, _ := migrate.ParseController(o.newController)
		if err := migrate.CheckControllersStopped(ctx, env.Client, legacyCtl, newCtl, o.newControllerLease, time.Now()); err != nil {
			return &codeError{code: exitBlocked, err: err}
		}
	}
	if err := o.Confirm(fmt.Sprintf("Adopt %s/%s into etcd-operator.cozystack.io?", st.Namespace, st.Name)); err != nil {
		return &codeError{code: exitAborted, err: err}
	}
	err := migrate.Apply(ctx, env, st, migrate.Options{BackupFile: o.backupFile, SkipBackup: o.skipBackup, Timeout: o.timeout, Out: o.Out})
	if err == nil {
		fmt.Fprintf(o.Out, "Adopted. Start the operator; it restarts members only when their template changes, one at a time.\n")
	}
	return err
}
