package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"time"
)

// settings is what the command serves with: zoo.cfg's keys and the
// system properties that matter to a standalone fakezk, each already
// checked.
type settings struct {
	port    int    // clientPort
	host    string // clientPortAddress's host ("" means every address)
	tick    time.Duration
	dataDir string
	logDir  string // dataLogDir; "" means dataDir

	minSession, maxSession time.Duration // 0: ZooKeeper's 2 and 20 ticks
	extendedTypes          bool
	superDigest            string
	juteMaxBuffer          int
	containerCheck         time.Duration
	containerMaxPerMinute  int
	containerMaxNeverUsed  time.Duration

	// notes are what the log says about the configuration: keys ignored,
	// ensembles served standalone.
	notes []string
}

func defaults() settings {
	return settings{port: 2181, tick: 2 * time.Second}
}

// Keys of zoo.cfg that QuorumPeerConfig knows and that mean nothing to one
// in-memory server: accepted, logged as ignored.
var ignoredKeys = map[string]string{
	"initLimit": "no ensemble", "syncLimit": "no ensemble", "electionAlg": "no ensemble",
	"electionPortBindRetry": "no ensemble", "quorumListenOnAllIPs": "no ensemble",
	"peerType": "no ensemble", "syncEnabled": "no ensemble", "standaloneEnabled": "always standalone",
	"reconfigEnabled": "no reconfig", "dynamicConfigFile": "no ensemble",
	"autopurge.snapRetainCount": "fakezk keeps one snapshot", "autopurge.purgeInterval": "fakezk keeps one snapshot",
	"maxClientCnxns": "no per-address connection limit", "clientPortListenBacklog": "the system's backlog",
	"localSessionsEnabled": "sessions are global", "localSessionsUpgradingEnabled": "sessions are global",
	"metricsProvider.className": "no metrics", "snapCount": "fakezk snapshots by its own count",
	"preAllocSize": "no preallocation", "forceSync": "fakezk always syncs",
	"multiAddress.enabled": "no ensemble", "sslQuorum": "no ensemble", "portUnification": "plain TCP only",
	"connectToLearnerMasterLimit": "no ensemble", "quorum.auth.enableSasl": "no ensemble",
	"4lw.commands.whitelist": "fakezk answers its own set of words (ruok, isro, srvr, stat, conf, envi, mntr)",
	"admin.enableServer":     "no admin server", "admin.serverPort": "no admin server",
}

// parseConfig reads a zoo.cfg (java.util.Properties syntax: key=value,
// key:value or key value; # and ! comments) into s, as
// QuorumPeerConfig.parseProperties does: the keys it knows, server.N
// lines (an ensemble, served standalone), and every other key as the
// system property "zookeeper."+key.
func parseConfig(r io.Reader, s *settings) error {
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		key, value := splitProperty(text)
		if err := s.setKey(key, value); err != nil {
			return fmt.Errorf("line %d: %w", line, err)
		}
	}
	return sc.Err()
}

func splitProperty(text string) (key, value string) {
	i := strings.IndexAny(text, "=: \t")
	if i < 0 {
		return text, ""
	}
	key, rest := text[:i], strings.TrimLeft(text[i:], " \t")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = rest[1:]
	}
	return key, strings.TrimSpace(rest)
}

func (s *settings) note(format string, args ...any) {
	s.notes = append(s.notes, fmt.Sprintf(format, args...))
}

// setKey applies one zoo.cfg key.
func (s *settings) setKey(key, value string) error {
	var err error
	switch {
	case key == "clientPort":
		s.port, err = portNumber(key, value)
	case key == "clientPortAddress":
		err = s.setAddress(value)
	case key == "tickTime":
		s.tick, err = millis(key, value, 1)
	case key == "dataDir":
		s.dataDir = value
	case key == "dataLogDir":
		s.logDir = value
	case key == "minSessionTimeout":
		s.minSession, err = sessionBound(key, value)
	case key == "maxSessionTimeout":
		s.maxSession, err = sessionBound(key, value)
	case key == "secureClientPort" || key == "secureClientPortAddress":
		return fmt.Errorf("%s: fakezk serves no TLS; remove the key to serve plain TCP on clientPort", key)
	case strings.HasPrefix(key, "server."):
		s.note("%s=%s: fakezk serves standalone; the servers of an ensemble share no state", key, value)
	case strings.HasPrefix(key, "group.") || strings.HasPrefix(key, "weight."):
		s.note("%s ignored: no ensemble", key)
	case ignoredKeys[key] != "":
		s.note("%s=%s ignored: %s", key, value, ignoredKeys[key])
	case strings.HasPrefix(key, "zookeeper."):
		// QuorumPeerConfig would set zookeeper.zookeeper.<...>, which no
		// one reads; the intent is plain.
		s.note("%s in zoo.cfg: ZooKeeper would set the system property zookeeper.%s and ignore it; fakezk takes it as %s", key, key, key)
		return s.setProperty(key, value)
	default:
		return s.setProperty("zookeeper."+key, value)
	}
	return err
}

// setProperty applies one system property (-D of SERVER_JVMFLAGS, or a
// zoo.cfg key QuorumPeerConfig does not know).
func (s *settings) setProperty(name, value string) error {
	var err error
	switch name {
	case "zookeeper.extendedTypesEnabled":
		s.extendedTypes = strings.EqualFold(value, "true") // Boolean.getBoolean
	case "zookeeper.emulate353TTLNodes":
		s.note("%s ignored: it changes how a TTL is stored on disk, which no client sees", name)
	case "zookeeper.DigestAuthenticationProvider.superDigest":
		user, digest, ok := strings.Cut(value, ":")
		if !ok || user == "" || digest == "" {
			return fmt.Errorf("%s=%q: want user:base64(sha1(user:password))", name, value)
		}
		s.superDigest = value
	case "jute.maxbuffer":
		s.juteMaxBuffer, err = positive(name, value)
	case "znode.container.checkIntervalMs":
		s.containerCheck, err = millis(name, value, 1)
	case "znode.container.maxPerMinute":
		s.containerMaxPerMinute, err = positive(name, value)
	case "znode.container.maxNeverUsedIntervalMs":
		s.containerMaxNeverUsed, err = millis(name, value, 0)
	case "zookeeper.authProvider.sasl", "zookeeper.authProvider.x509", "zookeeper.authProvider.1":
		return fmt.Errorf("%s=%s: fakezk has only the digest and ip providers", name, value)
	default:
		s.note("property %s=%s ignored: fakezk does not read it", name, value)
	}
	return err
}

func (s *settings) setAddress(value string) error {
	host, port, err := net.SplitHostPort(value)
	if err != nil { // a bare host, as ZooKeeper expects it
		s.host = value
		return nil
	}
	s.host = host
	if port != "" {
		s.port, err = portNumber("clientPortAddress", port)
	}
	return err
}

func portNumber(key, value string) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 || n > 65535 {
		return 0, fmt.Errorf("%s=%q: not a port number", key, value)
	}
	return n, nil
}

func millis(key, value string, min int) (time.Duration, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < min {
		return 0, fmt.Errorf("%s=%q: want a whole number of milliseconds, at least %d", key, value, min)
	}
	return time.Duration(n) * time.Millisecond, nil
}

// sessionBound is minSessionTimeout or maxSessionTimeout: -1, as
// ZooKeeper takes it, means the default (0 here).
func sessionBound(key, value string) (time.Duration, error) {
	if value == "-1" {
		return 0, nil
	}
	return millis(key, value, 1)
}

func positive(key, value string) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s=%q: want a positive whole number", key, value)
	}
	return n, nil
}

// loadConfig reads the zoo.cfg at path.
func loadConfig(path string, s *settings) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := parseConfig(f, s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// check reports settings that cannot be served together.
func (s *settings) check() error {
	lo, hi := s.minSession, s.maxSession
	if lo == 0 {
		lo = 2 * s.tick
	}
	if hi == 0 {
		hi = 20 * s.tick
	}
	if lo > hi {
		return fmt.Errorf("minSessionTimeout %d must not be larger than maxSessionTimeout %d",
			lo.Milliseconds(), hi.Milliseconds())
	}
	return nil
}
