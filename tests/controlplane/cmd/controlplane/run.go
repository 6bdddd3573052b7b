package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"
)

const (
	readyTimeout = 60 * time.Second
	// restartReadyTimeout bounds a restarted kube-apiserver's way back to
	// ready. It starts over a populated etcd, often while the fault harness
	// or the tests keep the machine busy; past the bound the launcher gives
	// up and the whole control plane stops, so it is generous.
	restartReadyTimeout = 3 * time.Minute
	stopTimeout         = 10 * time.Second
	// restartSignal asks a running launcher to restart kube-apiserver.
	restartSignal = syscall.SIGUSR1
)

// Files a running launcher keeps in its state directory.
func pidFile(dir string) string        { return filepath.Join(dir, "launcher.pid") }
func readyFile(dir string) string      { return filepath.Join(dir, "ready") }
func kubeconfigFile(dir string) string { return filepath.Join(dir, "kubeconfig") }
func serverFile(dir string) string     { return filepath.Join(dir, "server") }
func binLink(dir string) string        { return filepath.Join(dir, "bin") }

// ports are the loopback ports one control plane listens on.
type ports struct{ etcdClient, etcdPeer, apiserver int }

// controlPlane is one etcd and one kube-apiserver under this process.
type controlPlane struct {
	dir       string
	bin       string // directory holding the etcd and kube-apiserver binaries
	pki       pki
	ports     ports
	etcd      *child
	apiserver *child
	// exited receives the name of a child that exited on its own.
	exited chan string
}

func run(dir string, watchPID int) error {
	// Children get SIGKILL when the thread that started them exits; keep every
	// start on this one locked thread so that means "when the launcher dies".
	runtime.LockOSThread()
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range []string{readyFile(dir), kubeconfigFile(dir), serverFile(dir)} {
		_ = os.Remove(f)
	}
	// Each start is a fresh cluster: old etcd data would hold Leases from an
	// earlier run and make tests depend on each other.
	_ = os.RemoveAll(filepath.Join(dir, "etcd"))
	if err := os.WriteFile(pidFile(dir), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
		return err
	}
	// DIR/bin points at the binaries, so users of DIR find the matching kubectl.
	_ = os.Remove(binLink(dir))
	if err := os.Symlink(filepath.Dir(self), binLink(dir)); err != nil {
		return err
	}
	cp := &controlPlane{dir: dir, bin: filepath.Dir(self), pki: pki{dir}, exited: make(chan string, 2)}
	if err := cp.pki.generate(); err != nil {
		return fmt.Errorf("generating PKI: %w", err)
	}
	if cp.ports, err = freePorts(); err != nil {
		return err
	}

	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT, restartSignal)
	defer cp.stop()

	start := time.Now()
	if err := cp.startEtcd(); err != nil {
		return err
	}
	if err := cp.startAPIServer(readyTimeout); err != nil {
		return err
	}
	if err := cp.writeAdminKubeconfig(); err != nil {
		return err
	}
	if err := os.WriteFile(serverFile(dir), []byte(cp.serverURL()+"\n"), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(readyFile(dir), []byte(strconv.Itoa(1)), 0o644); err != nil {
		return err
	}
	log.Printf("ready in %v: server %s, kubeconfig %s", time.Since(start).Round(time.Millisecond),
		cp.serverURL(), kubeconfigFile(dir))

	ownerGone := watchProcess(watchPID)
	generation := 1
	for {
		select {
		case sig := <-signals:
			if sig != restartSignal {
				log.Printf("received %v: stopping", sig)
				return nil
			}
			log.Printf("restarting kube-apiserver")
			restart := time.Now()
			cp.apiserver.stop()
			if err := cp.startAPIServer(restartReadyTimeout); err != nil {
				return err
			}
			generation++
			if err := os.WriteFile(readyFile(dir), []byte(strconv.Itoa(generation)), 0o644); err != nil {
				return err
			}
			log.Printf("kube-apiserver restarted (generation %d) in %v", generation,
				time.Since(restart).Round(time.Millisecond))
		case <-ownerGone:
			log.Printf("process %d (the owner) exited: stopping", watchPID)
			return nil
		case name := <-cp.exited:
			return fmt.Errorf("%s exited unexpectedly; see %s", name, cp.logPath(name))
		}
	}
}

func (cp *controlPlane) serverURL() string {
	return fmt.Sprintf("https://127.0.0.1:%d", cp.ports.apiserver)
}

func (cp *controlPlane) logPath(name string) string { return filepath.Join(cp.dir, name+".log") }

func (cp *controlPlane) startEtcd() error {
	client := fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", cp.ports.etcdPeer)
	var err error
	cp.etcd, err = cp.startChild("etcd",
		"--name=baton-test",
		"--data-dir="+filepath.Join(cp.dir, "etcd"),
		"--listen-client-urls="+client,
		"--advertise-client-urls="+client,
		"--listen-peer-urls="+peer,
		"--initial-advertise-peer-urls="+peer,
		"--initial-cluster=baton-test="+peer,
		"--log-level=warn",
		// Test data is thrown away; fsync would only slow every write.
		"--unsafe-no-fsync",
	)
	if err != nil {
		return err
	}
	return waitFor("etcd", readyTimeout, func() error {
		resp, err := http.Get(client + "/health")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/health: %s", resp.Status)
		}
		return nil
	})
}

// startAPIServer starts kube-apiserver and waits up to timeout for /readyz.
// One that exits while starting is started again within the same timeout,
// as a kubelet restarts a static Pod: on a busy machine a slow etcd makes its
// post-start hooks time out, and it exits (start-service-ip-repair-controllers
// under the fault harness beside a CI build).
func (cp *controlPlane) startAPIServer(timeout time.Duration) error {
	client, err := cp.adminHTTPClient()
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for attempt := 1; ; attempt++ {
		apiserver, err := cp.startChild("kube-apiserver",
			fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", cp.ports.etcdClient),
			"--bind-address=127.0.0.1",
			"--advertise-address=127.0.0.1",
			fmt.Sprintf("--secure-port=%d", cp.ports.apiserver),
			"--tls-cert-file="+cp.pki.servingCert(),
			"--tls-private-key-file="+cp.pki.servingKey(),
			"--client-ca-file="+cp.pki.caCert(),
			"--authorization-mode=RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file="+cp.pki.serviceAccountPub(),
			"--service-account-signing-key-file="+cp.pki.serviceAccountKey(),
			"--service-cluster-ip-range=10.96.0.0/16",
			// No kubelet or controllers run here: nothing would reconcile
			// endpoints, and the ServiceAccount admission plugin would wait for a
			// token controller that never comes.
			"--endpoint-reconciler-type=none",
			"--disable-admission-plugins=ServiceAccount",
			"--cert-dir="+filepath.Join(cp.dir, "apiserver-certs"),
			"--v=1",
		)
		if err != nil {
			return err
		}
		cp.apiserver = apiserver
		err = waitFor("kube-apiserver", time.Until(deadline), func() error {
			select {
			case <-apiserver.done:
				return errExited
			default:
			}
			resp, err := client.Get(cp.serverURL() + "/readyz")
			if err != nil {
				return err
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("/readyz: %s", resp.Status)
			}
			return nil
		})
		if !errors.Is(err, errExited) {
			return err
		}
		// The exit was reported on cp.exited; take it, unless etcd's came first.
		if name := <-cp.exited; name != apiserver.name {
			return fmt.Errorf("%s exited unexpectedly; see %s", name, cp.logPath(name))
		}
		log.Printf("kube-apiserver exited while starting (attempt %d; see %s): starting it again",
			attempt, cp.logPath(apiserver.name))
		time.Sleep(time.Second)
	}
}

// child is one process the launcher started.
type child struct {
	name string
	cmd  *exec.Cmd
	// stopping is set before the launcher stops it on purpose, so its exit is
	// not reported as a failure.
	stopping atomic.Bool
	// done is closed once the process has exited and been reaped.
	done <-chan struct{}
}

// startChild starts bin/name with args, its output in DIR/name.log, killed
// if this process dies.
func (cp *controlPlane) startChild(name string, args ...string) (*child, error) {
	logFile, err := os.OpenFile(cp.logPath(name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(filepath.Join(cp.bin, name), args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	c := &child{name: name, cmd: cmd}
	exited := make(chan struct{})
	c.done = exited
	go func() {
		_ = cmd.Wait()
		logFile.Close()
		close(exited)
		if !c.stopping.Load() {
			cp.exited <- name
		}
	}()
	return c, nil
}

// stop sends SIGTERM, waits for the exit, and kills the process if it has
// not exited within stopTimeout.
func (c *child) stop() {
	if c == nil {
		return
	}
	c.stopping.Store(true)
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(stopTimeout):
		log.Printf("%s did not stop within %v: killing it", c.name, stopTimeout)
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

func (cp *controlPlane) stop() {
	cp.apiserver.stop()
	cp.etcd.stop()
	for _, f := range []string{readyFile(cp.dir), pidFile(cp.dir)} {
		_ = os.Remove(f)
	}
}

func (cp *controlPlane) adminHTTPClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(cp.pki.adminCert(), cp.pki.adminKey())
	if err != nil {
		return nil, err
	}
	caPEM, err := os.ReadFile(cp.pki.caCert())
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return &http.Client{
		Timeout:   2 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}},
	}, nil
}

// freePorts asks the kernel for three unused loopback ports.
func freePorts() (ports, error) {
	var got []int
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			l.Close()
		}
	}()
	for i := 0; i < 3; i++ {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return ports{}, err
		}
		listeners = append(listeners, l)
		got = append(got, l.Addr().(*net.TCPAddr).Port)
	}
	return ports{etcdClient: got[0], etcdPeer: got[1], apiserver: got[2]}, nil
}

// errExited, from a waitFor check, ends the wait at once: what it waits
// for can no longer become ready.
var errExited = errors.New("the process exited")

// waitFor calls check every 50ms until it returns nil, errExited, or timeout
// has passed.
func waitFor(what string, timeout time.Duration, check func() error) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		if last = check(); last == nil {
			return nil
		} else if errors.Is(last, errExited) {
			return fmt.Errorf("%s: %w", what, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s not ready after %v: %v", what, timeout, last)
}

// watchProcess returns a channel closed when process pid no longer exists;
// never closed for pid 0.
func watchProcess(pid int) <-chan struct{} {
	gone := make(chan struct{})
	if pid <= 0 {
		return gone
	}
	go func() {
		for {
			if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
				close(gone)
				return
			}
			time.Sleep(250 * time.Millisecond)
		}
	}()
	return gone
}

// restartAPIServer signals the launcher running in dir and waits until it
// reports the restarted kube-apiserver ready.
func restartAPIServer(dir string) error {
	pid, err := readInt(pidFile(dir))
	if err != nil {
		return fmt.Errorf("no launcher running in %s: %w", dir, err)
	}
	before, err := readInt(readyFile(dir))
	if err != nil {
		return fmt.Errorf("control plane in %s is not ready: %w", dir, err)
	}
	if err := syscall.Kill(pid, restartSignal); err != nil {
		return err
	}
	return waitFor("restarted kube-apiserver", restartReadyTimeout, func() error {
		if gen, err := readInt(readyFile(dir)); err != nil || gen <= before {
			return fmt.Errorf("still restarting")
		}
		return nil
	})
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(b))
}
