// SPDX-License-Identifier: Apache-2.0
//
// Offline validation of container/kubernetes/: every file parses (and reads
// the same as YAML 1.1, the way Helm reads it), every object passes the
// Kubernetes (or prometheus-operator) schema with no field the schema does not
// know, the post-renderer's patches (agent/*/) pass as a Pod, the agent
// container meets Pod Security "restricted" where its mode allows and has
// exactly the documented exceptions where it does not, its resources keep a
// Guaranteed pod Guaranteed, the admission policy's CEL expressions decide
// sample requests as documented, every alert's runbook is a heading of the
// operator guide, the promtool tests feed the series the real exporters
// export, and the files agree with each other, with the Containerfile and with
// the metrics the real binary exports; the rollout Job (rollout/) passes its
// schemas and Pod Security "restricted", and grants exactly the access of
// tests/integration/rollout-rbac.yaml plus kubectl exec into the one pod its
// --slurm-exec names. Writes the PrometheusRule's spec as rule files for
// promtool, and the command lines the patches and the Job give the agent.
//
// Usage: node validate-manifests.js --deps DIR --dir DIR --entrypoint PATH
//                                   --metrics FILE --docs FILE --rule-tests FILE
//                                   --out DIR
//   --deps        where scripts/setup-node-deps.sh installed the packages
//   --dir         the manifests (container/kubernetes)
//   --entrypoint  the image's ENTRYPOINT (from container/Containerfile)
//   --metrics     a /metrics answer of the real agent
//   --docs        docs/OPERATIONS.md, where the runbooks are
//   --rule-tests  tests/kubernetes/prometheusrule.test.yaml
//   --out         receives prometheusrule.rules.yaml (the spec),
//                 prometheusrule.bare.rules.yaml (without annotations, for
//                 promtool test rules) and commands.json (the agent's
//                 arguments and its probe's, from each variant, for the
//                 real binary to check)
// Prints "ok - CHECK" or "not ok - CHECK: WHY" per check; exits 1 when any
// failed, 2 on a usage error.
'use strict';

const fs = require('fs');
const path = require('path');
const { createRequire } = require('module');
const { pathToFileURL } = require('url');

const opts = {};
const OPTIONS = ['deps', 'dir', 'entrypoint', 'metrics', 'docs', 'rule-tests', 'out'];
for (let i = 2; i < process.argv.length; i += 2) {
        const key = process.argv[i].replace(/^--/, '');
        if (!OPTIONS.includes(key) || i + 1 >= process.argv.length) {
                console.error(`validate-manifests: bad argument ${process.argv[i]}`);
                process.exit(2);
        }
        opts[key] = process.argv[i + 1];
}
for (const key of OPTIONS) {
        if (!opts[key]) {
                console.error(`validate-manifests: --${key} is required`);
                process.exit(2);
        }
}

const depsRequire = createRequire(path.join(path.resolve(opts.deps), 'package.json'));
const YAML = depsRequire('yaml');
const core = depsRequire('kubernetes-models/v1');
const rbac = depsRequire('kubernetes-models/rbac.authorization.k8s.io/v1');
const monitoring = depsRequire('@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1');
const admission = depsRequire('kubernetes-models/admissionregistration.k8s.io/v1');
const networking = depsRequire('kubernetes-models/networking.k8s.io/v1');

// --- reporting -----------------------------------------------------------------
let failures = 0;
function check(ok, what, why) {
        if (ok) {
                console.log(`ok - ${what}`);
        } else {
                failures++;
                console.log(`not ok - ${what}${why ? `: ${why}` : ''}`);
        }
        return ok;
}
const clone = (x) => JSON.parse(JSON.stringify(x));
const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

// --- what the files must agree on ----------------------------------------------
// The Slinky facts (pod labels, the bundle's volume), the agent's interface
// (its options' defaults, its metrics) and the names these files share.
const SLINKY_INSTANCES = { nodesets: 'slinky-slurm-worker-slinky', loginsets: 'slinky-slurm-login-slinky' };
const WORKLOAD = { nodesets: 'slurmd', loginsets: 'login' };
const TARGET_PROCESS = { nodesets: 'slurmd', loginsets: 'sshd' };
const ENROOT_VOLUME = 'enroot-config';
const ENROOT_CONFIGMAP = 'slinky-slurm-enroot-config';
// The bundle's volume the agent mounts (AICR's recipes/components/slinky-slurm/values.yaml).
const BUNDLE_VOLUMES = [{ name: ENROOT_VOLUME, configMap: { name: ENROOT_CONFIGMAP } }];
const RUNNING_FILES = { 'enroot.conf': '/etc/enroot/enroot.conf', '99-aicr-defaults.env': '/etc/enroot/environ.d/99-aicr-defaults.env' };
const AGENT = 'aicr-enroot-agent';
const SA_DIR_DEFAULT = '/var/run/secrets/kubernetes.io/serviceaccount';
const JOB = 'aicr-enroot-agent';
const ROLE_RULES = [
        { apiGroups: [''], resources: ['pods'], verbs: ['get', 'watch'] },
        { apiGroups: [''], resources: ['pods/status'], verbs: ['patch'] },
        { apiGroups: [''], resources: ['events'], verbs: ['create'] },
];
// Metrics of the Kubernetes client, announced with its options; the binary's
// own /metrics is used instead as soon as it exports them.
const ANNOUNCED_METRICS = {
        aicr_enroot_agent_kube_requests_total: ['verb', 'code'],
        aicr_enroot_agent_condition_synced: [],
        aicr_enroot_agent_kube_last_success_timestamp_seconds: [],
};
// Labels a scrape through podmonitor.yaml adds to every series.
const TARGET_LABELS = ['job', 'namespace', 'pod', 'container', 'endpoint', 'instance', 'node', 'slurm_role'];
// Label values announced by the agent's interface before this binary exports
// them (the state the agent reports after its own restart, when it can no
// longer verify the workload's files).
const ANNOUNCED_LABEL_VALUES = { aicr_enroot_config_state: { state: ['unverifiable'] } };
// Series from other exporters the rules may use, with the labels they carry.
// kube-state-metrics (docs/pod-metrics.md): a native sidecar is an init
// container and is counted under kube_pod_init_container_*; a scrape through
// kube-prometheus-stack's ServiceMonitor (honorLabels) adds job, instance,
// endpoint and service.
const KSM_SCRAPE_LABELS = ['job', 'instance', 'endpoint', 'service'];
const EXTERNAL_METRICS = {
        up: null,
        kube_pod_container_status_restarts_total: ['container', 'namespace', 'pod', 'uid'],
        kube_pod_init_container_status_restarts_total: ['container', 'namespace', 'pod', 'uid'],
};
// The post-renderer's variants (agent/VARIANT/): a kustomization.yaml and one
// strategic merge patch per Slinky kind, whose spec.template.spec is the
// podSpec fragment merged into what the chart rendered.
const VARIANTS = {
        'agent/sidecar': { sidecar: 'native', mode: 'running-root' },
        'agent/plain-container': { sidecar: 'plain', mode: 'running-root' },
        'agent/target-process': { sidecar: 'native', mode: 'target-process' },
};
const PATCHES = { nodesets: { file: 'nodeset.yaml', kind: 'NodeSet' }, loginsets: { file: 'loginset.yaml', kind: 'LoginSet' } };
const SLINKY_API = 'slinky.slurm.net/v1beta1';
const SCHEMA_FILE = 'slinky-podspec-schema.json';

// --- parsing ---------------------------------------------------------------------
function parseFile(file) {
        const text = fs.readFileSync(file, 'utf8');
        const name = path.basename(file);
        const docs = YAML.parseAllDocuments(text, { uniqueKeys: true });
        const problems = [];
        for (const d of docs) {
                for (const e of [...d.errors, ...d.warnings]) problems.push(e.message.split('\n')[0]);
        }
        if (!check(problems.length === 0, `${name} parses as YAML`, problems.join('; '))) return [];
        const values = docs.map((d) => d.toJS()).filter((v) => v !== null && v !== undefined);
        // Helm reads YAML 1.1, where yes/no/on/off are booleans and 0644 is octal.
        const old = YAML.parseAllDocuments(text, { version: '1.1' })
                .map((d) => d.toJS())
                .filter((v) => v !== null && v !== undefined);
        check(same(values, old), `${name} reads the same as YAML 1.1 (Helm)`, 'a scalar changes meaning: quote it');
        return values;
}

// --- schema validation, strict ------------------------------------------------------
// kubernetes-models validates types, formats and required fields, but like the
// API's OpenAPI schema it lets unknown fields through (kubectl's strict field
// validation would reject them). The compiled validators read every field
// their schema defines: an object of which some fields were read and others
// not holds fields the schema does not know.
function validateStrict(Model, obj, what) {
        const model = new Model(clone(obj));
        const seen = new Map();
        const wrap = (value, where) => {
                if (value === null || typeof value !== 'object') return value;
                if (!seen.has(value)) seen.set(value, { where, keys: new Set() });
                return new Proxy(value, {
                        get(target, key, receiver) {
                                const v = Reflect.get(target, key, receiver);
                                if (typeof key !== 'string') return v;
                                seen.get(target).keys.add(key);
                                return wrap(v, `${where}/${key}`);
                        },
                });
        };
        let error = '';
        try {
                model.validate.call(wrap(model, ''));
        } catch (e) {
                error = e.message;
        }
        check(error === '', `${what} passes the ${Model.kind || 'object'} schema`, error);
        const unknown = [];
        for (const [value, info] of seen) {
                if (Array.isArray(value) || info.keys.size === 0) continue;
                for (const key of Object.keys(value)) {
                        if (!info.keys.has(key)) unknown.push(`${info.where}/${key}`);
                }
        }
        check(unknown.length === 0, `${what} has no field the schema does not know`, unknown.join(', '));
}

// --- Pod Security Standards ------------------------------------------------------------
// The checks of the "baseline" and "restricted" profiles (Kubernetes 1.30)
// that apply to one container and the pod fields a podSpec fragment sets.
// Returns the violations as short strings.
const BASELINE_CAPS = ['AUDIT_WRITE', 'CHOWN', 'DAC_OVERRIDE', 'FOWNER', 'FSETID', 'KILL', 'MKNOD',
        'NET_BIND_SERVICE', 'SETFCAP', 'SETGID', 'SETPCAP', 'SETUID', 'SYS_CHROOT'];
const RESTRICTED_VOLUMES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim',
        'projected', 'secret'];
const SAFE_SYSCTLS = ['kernel.shm_rmid_forced', 'net.ipv4.ip_local_port_range', 'net.ipv4.ip_unprivileged_port_start',
        'net.ipv4.tcp_syncookies', 'net.ipv4.ping_group_range', 'net.ipv4.ip_local_reserved_ports',
        'net.ipv4.tcp_keepalive_time', 'net.ipv4.tcp_fin_timeout', 'net.ipv4.tcp_keepalive_intvl',
        'net.ipv4.tcp_keepalive_probes'];
function podSecurityViolations(podSpec, container) {
        const v = [];
        const psc = podSpec.securityContext || {};
        const sc = container.securityContext || {};
        // baseline
        for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (podSpec[f]) v.push(f);
        if (sc.privileged) v.push('privileged');
        const caps = (sc.capabilities && sc.capabilities.add) || [];
        for (const c of caps) if (!BASELINE_CAPS.includes(c)) v.push(`capabilities.add ${c}`);
        for (const vol of podSpec.volumes || []) if (vol.hostPath) v.push(`hostPath volume ${vol.name}`);
        for (const p of container.ports || []) if (p.hostPort) v.push(`hostPort ${p.hostPort}`);
        for (const ctx of [psc, sc]) {
                if (ctx.appArmorProfile && !['RuntimeDefault', 'Localhost'].includes(ctx.appArmorProfile.type)) {
                        v.push(`appArmorProfile ${ctx.appArmorProfile.type}`);
                }
                if (ctx.seLinuxOptions && (ctx.seLinuxOptions.user || ctx.seLinuxOptions.role)) v.push('seLinuxOptions user/role');
                if (ctx.seccompProfile && ctx.seccompProfile.type === 'Unconfined') v.push('seccompProfile Unconfined');
                if (ctx.windowsOptions && ctx.windowsOptions.hostProcess) v.push('windowsOptions.hostProcess');
        }
        if (sc.procMount && sc.procMount !== 'Default') v.push(`procMount ${sc.procMount}`);
        for (const s of psc.sysctls || []) if (!SAFE_SYSCTLS.includes(s.name)) v.push(`sysctl ${s.name}`);
        // restricted
        for (const vol of podSpec.volumes || []) {
                const type = Object.keys(vol).find((k) => k !== 'name');
                if (!RESTRICTED_VOLUMES.includes(type)) v.push(`volume type ${type} (${vol.name})`);
        }
        if (sc.allowPrivilegeEscalation !== false) v.push('allowPrivilegeEscalation is not false');
        const nonRoot = sc.runAsNonRoot !== undefined ? sc.runAsNonRoot : psc.runAsNonRoot;
        if (nonRoot !== true) v.push('runAsNonRoot is not true');
        const uid = sc.runAsUser !== undefined ? sc.runAsUser : psc.runAsUser;
        if (uid === 0) v.push('runAsUser 0');
        const seccomp = (sc.seccompProfile || psc.seccompProfile || {}).type;
        if (!['RuntimeDefault', 'Localhost'].includes(seccomp)) v.push('seccompProfile is not RuntimeDefault or Localhost');
        const drop = (sc.capabilities && sc.capabilities.drop) || [];
        if (!drop.includes('ALL')) v.push('capabilities.drop lacks ALL');
        for (const c of caps) if (c !== 'NET_BIND_SERVICE' && !v.includes(`capabilities.add ${c}`)) v.push(`capabilities.add ${c}`);
        return v;
}

// --- quantities ---------------------------------------------------------------------------
function quantity(q) {
        const m = String(q).match(/^([0-9.]+)(m|k|M|G|Ki|Mi|Gi)?$/);
        if (!m) return NaN;
        const f = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2]] || 1;
        return parseFloat(m[1]) * f;
}

// --- the agent container in a variant's patch ---------------------------------------------
function argMap(args) {
        const m = {};
        for (const a of args || []) {
                const [k, ...rest] = a.split('=');
                m[k] = rest.join('=');
        }
        return m;
}

// expect.volume, expect.files and expect.bundle name the ConfigMap volume,
// the files the agent compares (key: path) and the volumes the pod has
// beside the patch's; Slinky's bundle when not given (the generic example
// gives its own).
function checkAgent(file, set, podSpec, expect, shared) {
        const where = `${file} ${set}`;
        const volume = expect.volume || ENROOT_VOLUME;
        const runningFiles = expect.files || RUNNING_FILES;
        const bundleVolumes = expect.bundle || BUNDLE_VOLUMES;
        const list = expect.sidecar === 'native' ? podSpec.initContainers : podSpec.containers;
        const agent = (list || []).find((c) => c.name === AGENT);
        if (!check(agent, `${where}: the agent is in ${expect.sidecar === 'native' ? 'initContainers' : 'containers'}`)) return null;
        if (expect.sidecar === 'native') {
                check(agent.restartPolicy === 'Always', `${where}: the agent is a native sidecar (restartPolicy: Always)`);
        } else {
                check(agent.restartPolicy === undefined, `${where}: the plain container has no restartPolicy`);
                check(!(podSpec.initContainers || []).some((c) => c.name === AGENT), `${where}: no second agent in initContainers`);
        }
        const args = argMap(agent.args);
        const mounts = agent.volumeMounts || [];
        // The patch adds only the agent's own volumes: a volume of the bundle
        // named here would be merged into, and changed.
        for (const v of podSpec.volumes || []) {
                check(v.name !== volume && (agent.volumeMounts || []).some((m) => m.name === v.name),
                        `${where}: the patch's volume ${v.name} is the agent's own`);
        }
        // What the pod will have: the patch's volumes and the bundle's.
        const volumes = Object.fromEntries([...bundleVolumes, ...(podSpec.volumes || [])].map((v) => [v.name, v]));
        for (const m of mounts) check(volumes[m.name], `${where}: mount ${m.mountPath} refers to the patch's volume or the bundle's`, m.name);

        // the desired side: the whole directory
        const desired = args['--desired-dir'];
        check(desired, `${where}: --desired-dir is set`);
        check(mounts.some((m) => m.name === volume && m.mountPath === desired && !m.subPath && m.readOnly === true),
                `${where}: the ${volume} volume is mounted whole and read-only at --desired-dir`);

        // the running side
        if (expect.mode === 'running-root') {
                const root = args['--running-root'];
                check(root && root !== '/', `${where}: --running-root names the agent's own mounts`);
                for (const [key, p] of Object.entries(runningFiles)) {
                        check(mounts.some((m) => m.name === volume && m.subPath === key &&
                                m.mountPath === `${root}${p}` && m.readOnly === true),
                        `${where}: ${key} is mounted read-only with subPath at --running-root${p}`);
                }
                check(args['--target-process'] === undefined, `${where}: no --target-process in running-root mode`);
                check(podSpec.shareProcessNamespace === undefined,
                        `${where}: no shared process namespace where nothing needs it`);
        } else {
                check(args['--target-process'] === TARGET_PROCESS[set],
                        `${where}: --target-process is ${TARGET_PROCESS[set]}`, args['--target-process']);
                check(podSpec.shareProcessNamespace === true, `${where}: shareProcessNamespace: true`);
                check(!mounts.some((m) => m.subPath), `${where}: no subPath mounts in target-process mode`);
                check(args['--running-root'] === undefined, `${where}: no --running-root in target-process mode`);
        }

        // HTTP: the named port, the probes
        const listen = args['--listen'] || ':9100';
        const port = Number(listen.split(':').pop());
        const named = (agent.ports || []).find((p) => p.containerPort === port);
        check(named && named.name, `${where}: the --listen port ${port} is a named container port`);
        if (named) {
                check(/^(?=.*[a-z])[a-z0-9]([a-z0-9-]*[a-z0-9])?$/.test(named.name) && named.name.length <= 15,
                        `${where}: the port name is a valid IANA service name`, named.name);
                shared.portNames.add(named.name);
                shared.portNumbers.add(port);
        }
        const ready = agent.readinessProbe && agent.readinessProbe.exec && agent.readinessProbe.exec.command;
        check(ready && ready[0] === opts.entrypoint && ready.includes('--check'),
                `${where}: the readiness probe runs ${opts.entrypoint} --check`, JSON.stringify(ready));
        if (ready) {
                const probeListen = argMap(ready)['--listen'] || ':9100';
                check(Number(probeListen.split(':').pop()) === port, `${where}: --check asks the port the agent listens on`);
                check(!ready.includes('--require-current'), `${where}: drift does not make the pod unready`);
        }
        const live = agent.livenessProbe && agent.livenessProbe.httpGet;
        check(live && live.path === '/healthz' && named && (live.port === named.name || live.port === port),
                `${where}: the liveness probe gets /healthz on the agent's port`);

        // the Kubernetes client
        check(['on', 'auto'].includes(args['--kube']), `${where}: --kube is on (or auto)`, args['--kube']);
        const saDir = args['--serviceaccount-dir'] || SA_DIR_DEFAULT;
        const tokenMount = mounts.find((m) => m.mountPath === saDir);
        check(tokenMount && tokenMount.readOnly === true, `${where}: a token volume is mounted read-only at ${saDir}`);
        const tokenVol = tokenMount && volumes[tokenMount.name];
        const sources = (tokenVol && tokenVol.projected && tokenVol.projected.sources) || [];
        const sat = sources.find((s) => s.serviceAccountToken);
        check(sat && sat.serviceAccountToken.path === 'token' && sat.serviceAccountToken.expirationSeconds >= 600,
                `${where}: the projected volume has the service account token at token`);
        check(sources.some((s) => s.configMap && s.configMap.name === 'kube-root-ca.crt' &&
                same(s.configMap.items, [{ key: 'ca.crt', path: 'ca.crt' }])), `${where}: ... kube-root-ca.crt at ca.crt`);
        check(sources.some((s) => s.downwardAPI && same(s.downwardAPI.items,
                [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }])),
        `${where}: ... the namespace at namespace`);
        const others = [...(podSpec.containers || []), ...(podSpec.initContainers || [])].filter((c) => c !== agent);
        check(tokenMount && !others.some((c) => (c.volumeMounts || []).some((m) => m.name === tokenMount.name)),
                `${where}: only the agent mounts the token`);
        check(podSpec.automountServiceAccountToken !== true, `${where}: the podSpec does not turn automounting on`);
        shared.serviceAccounts.add(podSpec.serviceAccountName);
        for (const [name, field] of [['POD_NAME', 'metadata.name'], ['POD_NAMESPACE', 'metadata.namespace'],
                ['POD_UID', 'metadata.uid']]) {
                const e = (agent.env || []).find((x) => x.name === name);
                check(e && e.valueFrom && e.valueFrom.fieldRef && e.valueFrom.fieldRef.fieldPath === field,
                        `${where}: ${name} comes from the downward API (${field})`);
        }

        // resources: requests equal to limits, so that a pod whose other
        // containers have them equal stays Guaranteed (a native sidecar counts)
        const r = agent.resources || {};
        for (const res of ['cpu', 'memory']) {
                const req = r.requests && quantity(r.requests[res]);
                const lim = r.limits && quantity(r.limits[res]);
                check(req > 0 && lim > 0 && req === lim, `${where}: ${res} requests and limits are set and equal`,
                        `requests ${r.requests && r.requests[res]}, limits ${r.limits && r.limits[res]}`);
        }
        check(quantity(r.limits && r.limits.memory) <= 256 * 1024 ** 2, `${where}: the memory limit is small`);

        // security
        const sc = agent.securityContext || {};
        check(sc.readOnlyRootFilesystem === true, `${where}: readOnlyRootFilesystem: true`);
        check(sc.allowPrivilegeEscalation === false, `${where}: allowPrivilegeEscalation: false`);
        const violations = podSecurityViolations(podSpec, agent).sort();
        if (expect.mode === 'running-root') {
                check(violations.length === 0, `${where}: the agent container meets Pod Security "restricted"`, violations.join(', '));
        } else {
                // the documented price of reading another process's files, nothing more
                const allowed = ['capabilities.add SYS_PTRACE', 'runAsNonRoot is not true', 'runAsUser 0'];
                if (set === 'nodesets') allowed.push('appArmorProfile Unconfined');
                check(same(violations, allowed.sort()),
                        `${where}: the only departures from "restricted" are ${allowed.join(', ')}`, violations.join(', '));
                check(same(sc.capabilities && sc.capabilities.add, ['SYS_PTRACE']), `${where}: CAP_SYS_PTRACE and no other capability`);
        }
        shared.images.add(agent.image);
        shared.commands.push({ what: `${where}: the agent's arguments`, kind: 'daemon', args: agent.args || [] });
        if (ready) shared.commands.push({ what: `${where}: the readiness probe`, kind: 'probe', args: ready.slice(1) });
        return agent;
}

// The pod the operator would build from a podSpec fragment: its workload
// container (with the bundle's subPath mounts) first, then the fragment's.
function asPod(set, podSpec) {
        const spec = clone(podSpec);
        const workload = {
                name: WORKLOAD[set],
                image: `slinky/${WORKLOAD[set]}`,
                volumeMounts: Object.entries(RUNNING_FILES).map(([key, p]) => ({
                        name: ENROOT_VOLUME, mountPath: p, subPath: key, readOnly: true,
                })),
        };
        spec.containers = [workload, ...(spec.containers || [])];
        spec.volumes = [...BUNDLE_VOLUMES, ...(spec.volumes || [])];
        if (spec.automountServiceAccountToken === undefined) spec.automountServiceAccountToken = false;
        return {
                apiVersion: 'v1', kind: 'Pod',
                metadata: { name: `${set}-0`, namespace: 'slurm', labels: { 'app.kubernetes.io/instance': SLINKY_INSTANCES[set] } },
                spec,
        };
}

// --- metrics of the real binary ------------------------------------------------------------
function loadMetrics(file) {
        const metrics = {};
        for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
                const m = line.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{([^}]*)\})? /);
                if (!m) continue;
                const entry = metrics[m[1]] || (metrics[m[1]] = {});
                const names = [];
                for (const pair of (m[3] || '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
                        (entry[pair[1]] || (entry[pair[1]] = new Set())).add(pair[2]);
                        names.push(pair[1]);
                }
                // the label names one series carries, not a map key of entry
                Object.defineProperty(entry, 'signatures', { value: entry.signatures || new Set(), enumerable: false });
                entry.signatures.add(names.sort().join(','));
        }
        return metrics;
}

// What the agent exports: the real binary's /metrics, and what its interface
// announces beyond it.
function knownMetrics(metrics) {
        const known = { ...metrics };
        for (const [name, labels] of Object.entries(ANNOUNCED_METRICS)) {
                if (known[name]) continue;
                known[name] = Object.fromEntries(labels.map((l) => [l, null]));
                Object.defineProperty(known[name], 'signatures', { value: new Set([[...labels].sort().join(',')]), enumerable: false });
        }
        for (const [name, byLabel] of Object.entries(ANNOUNCED_LABEL_VALUES)) {
                for (const [label, values] of Object.entries(byLabel)) {
                        if (known[name] && known[name][label]) for (const v of values) known[name][label].add(v);
                }
        }
        return known;
}

// GitHub's heading anchors: lower case, every character but letters, digits,
// spaces, hyphens and underscores removed, spaces turned into hyphens, a
// repeated anchor suffixed -1, -2, ... (github-slugger, as github.com renders
// Markdown). Headings inside fenced code blocks are not headings.
function headingAnchors(markdown) {
        const anchors = new Set();
        const seen = {};
        let fenced = false;
        for (const line of markdown.split('\n')) {
                if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
                const m = !fenced && line.match(/^#{1,6}\s+(.*?)\s*#*\s*$/);
                if (!m) continue;
                let slug = m[1].toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
                if (seen[slug] !== undefined) {
                        seen[slug]++;
                        slug = `${slug}-${seen[slug]}`;
                } else {
                        seen[slug] = 0;
                }
                anchors.add(slug);
        }
        return anchors;
}

function checkRules(spec, known, anchors) {
        check(Array.isArray(spec.groups) && spec.groups.length > 0, 'prometheusrule.yaml has rule groups');
        const alerts = new Set();
        for (const group of spec.groups || []) {
                for (const rule of group.rules || []) {
                        const what = `alert ${rule.alert}`;
                        if (!check(rule.alert && typeof rule.expr === 'string', `${group.name}: every rule is an alert with an expr`)) continue;
                        check(!alerts.has(rule.alert), `${what} is defined once`);
                        alerts.add(rule.alert);
                        check(['critical', 'warning', 'info'].includes(rule.labels && rule.labels.severity), `${what} has a severity`);
                        check(rule.annotations && rule.annotations.summary && rule.annotations.description,
                                `${what} has a summary and a description`);
                        const runbook = (rule.annotations && rule.annotations.runbook_url) || '';
                        const [doc, anchor] = runbook.split('#');
                        check(doc === 'docs/OPERATIONS.md' && anchors.has(anchor),
                                `${what}: its runbook_url is a heading of docs/OPERATIONS.md`, runbook || 'no runbook_url');
                        // every selector of a metric, with its matchers
                        for (const m of rule.expr.matchAll(/\b([a-z_][a-z0-9_]*)\s*(\{([^}]*)\})?/g)) {
                                const name = m[1];
                                if (!/^(aicr_|process_|up$|kube_)/.test(name)) continue;
                                const matchers = [...(m[3] || '').matchAll(/([a-z_]+)\s*(=~|!~|!=|=)\s*"([^"]*)"/g)];
                                if (name.startsWith('aicr_') || name.startsWith('process_')) {
                                        if (!check(known[name], `${what}: ${name} is a metric the agent exports`)) continue;
                                        check(matchers.some((x) => x[1] === 'job' && x[2] === '=' && x[3] === JOB),
                                                `${what}: ${name} is selected with job="${JOB}"`);
                                        for (const [, label, op, value] of matchers) {
                                                if (TARGET_LABELS.includes(label)) continue;
                                                if (!check(label in known[name], `${what}: ${name} has a label ${label}`)) continue;
                                                const values = known[name][label];
                                                if (!values || !['=', '=~'].includes(op)) continue;
                                                const wanted = op === '=' ? [value] : value.split('|');
                                                for (const w of wanted) {
                                                        check(values.has(w), `${what}: ${name}{${label}="${w}"} is a series the agent exports`,
                                                                `it exports ${[...values].join(', ')}`);
                                                }
                                        }
                                } else if (check(name in EXTERNAL_METRICS, `${what}: ${name} is a known external metric`) &&
                                        EXTERNAL_METRICS[name]) {
                                        for (const [, label] of matchers) {
                                                check(EXTERNAL_METRICS[name].includes(label) || KSM_SCRAPE_LABELS.includes(label),
                                                        `${what}: ${name} has a label ${label}`);
                                        }
                                }
                        }
                }
        }
        return alerts;
}

// The promtool tests must feed the rules the series the exporters really
// export: the agent's with exactly the label names of one of its real series
// (plus the target labels of a scrape through podmonitor.yaml), and label
// values it exports; kube-state-metrics' with the labels it gives them; the
// restart alert fed both the init-container series (native sidecar, the
// default) and the container series (plain-container variant).
function parseSeries(text) {
        const m = text.match(/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}$/);
        if (!m) return null;
        const labels = {};
        for (const pair of m[2].matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"/g)) labels[pair[1]] = pair[2];
        return { name: m[1], labels };
}
function checkRuleTests(known, ruleAlerts) {
        let doc;
        try {
                doc = YAML.parse(fs.readFileSync(opts['rule-tests'], 'utf8'));
        } catch (e) {
                check(false, 'prometheusrule.test.yaml parses', e.message.split('\n')[0]);
                return;
        }
        const fed = new Set();
        for (const t of doc.tests || []) {
                for (const input of t.input_series || []) {
                        const series = parseSeries(input.series);
                        const what = `prometheusrule.test.yaml: ${input.series}`;
                        if (!check(series, `${what} parses`)) continue;
                        const { name, labels } = series;
                        const names = Object.keys(labels);
                        if (name.startsWith('aicr_') || name.startsWith('process_')) {
                                if (labels.job !== JOB) continue; // a series of another job, left unselected
                                if (!check(known[name], `${what}: the agent exports ${name}`)) continue;
                                const own = names.filter((l) => !TARGET_LABELS.includes(l)).sort().join(',');
                                check(known[name].signatures.has(own), `${what}: has the label names of a real series of ${name}`,
                                        `it carries ${own || 'none'}; the agent exports ${[...known[name].signatures].join(' | ') || 'none'}`);
                                check(['namespace', 'pod'].every((l) => names.includes(l)), `${what}: carries the scrape's namespace and pod`);
                                for (const l of names) {
                                        const values = known[name][l];
                                        if (values) check(values.has(labels[l]), `${what}: ${l}="${labels[l]}" is a value the agent exports`);
                                }
                        } else if (name === 'up') {
                                check(names.every((l) => TARGET_LABELS.includes(l)), `${what}: up carries only target labels`);
                        } else if (check(name in EXTERNAL_METRICS, `${what}: ${name} is a known external metric`)) {
                                const own = names.filter((l) => !KSM_SCRAPE_LABELS.includes(l)).sort();
                                check(same(own, [...EXTERNAL_METRICS[name]].sort()), `${what}: carries the labels kube-state-metrics gives it`,
                                        own.join(','));
                                check(labels.job === 'kube-state-metrics', `${what}: as scraped from kube-state-metrics`);
                                if (labels.container === AGENT) fed.add(name);
                        }
                }
        }
        const fired = new Set((doc.tests || []).flatMap((t) => (t.alert_rule_test || [])
                .filter((a) => (a.exp_alerts || []).length > 0).map((a) => a.alertname)));
        for (const alert of ruleAlerts) check(fired.has(alert), `prometheusrule.test.yaml has a case where ${alert} fires`);
        check(fed.has('kube_pod_init_container_status_restarts_total'),
                'prometheusrule.test.yaml feeds the restart alert the native sidecar\'s init-container series');
        check(fed.has('kube_pod_container_status_restarts_total'),
                'prometheusrule.test.yaml feeds the restart alert the plain container\'s series');
}

// --- main --------------------------------------------------------------------------------------
const files = fs.readdirSync(opts.dir).filter((f) => /\.ya?ml$/.test(f)).sort();
const shared = { portNames: new Set(), portNumbers: new Set(), serviceAccounts: new Set(), images: new Set(), agents: {}, commands: [] };
const objects = [];

// the post-renderer's variants
const agentDir = path.join(opts.dir, 'agent');
check(fs.existsSync(path.join(agentDir, SCHEMA_FILE)), `agent/${SCHEMA_FILE} exists`);
for (const [variant, expect] of Object.entries(VARIANTS)) {
        const dir = path.join(opts.dir, variant);
        if (!check(fs.existsSync(dir), `${variant}/ exists`)) continue;
        const [kz] = parseFile(path.join(dir, 'kustomization.yaml'));
        const wantPatches = Object.values(PATCHES).map(({ file, kind }) => ({
                path: file, target: { group: SLINKY_API.split('/')[0], version: SLINKY_API.split('/')[1], kind },
        }));
        check(kz && same(kz.resources, ['helm-output.yaml']) && same(kz.openapi, { path: SCHEMA_FILE }) &&
                same(kz.patches, wantPatches) && kz.kind === 'Kustomization',
        `${variant}/kustomization.yaml patches every NodeSet and LoginSet of helm-output.yaml, with the schema's merge keys`,
        JSON.stringify(kz));
        shared.agents[variant] = {};
        for (const [set, { file, kind }] of Object.entries(PATCHES)) {
                const where = `${variant}/${file}`;
                const docs = parseFile(path.join(dir, file));
                if (!check(docs.length === 1, `${where} is one YAML document`)) continue;
                const [doc] = docs;
                check(doc.apiVersion === SLINKY_API && doc.kind === kind, `${where} patches a ${kind} (${SLINKY_API})`);
                const podSpec = doc.spec && doc.spec.template && doc.spec.template.spec;
                if (!check(podSpec, `${where}: spec.template.spec is set`)) continue;
                check(same(Object.keys(doc).sort(), ['apiVersion', 'kind', 'metadata', 'spec']) &&
                        same(Object.keys(doc.spec), ['template']) && same(Object.keys(doc.spec.template), ['spec']),
                `${where} touches nothing but spec.template.spec`);
                validateStrict(core.Pod, asPod(set, podSpec), `${where} as a Pod`);
                const agent = checkAgent(variant, set, podSpec, expect, shared);
                shared.agents[variant][set] = { agent, podSpec };
        }
}

// --- the generic sidecar example (examples/generic-deployment.yaml) ----------------------------
// A plain Deployment whose workload mounts a ConfigMap key with subPath, and
// the agent beside it comparing that key as a raw file: the same checks of the
// agent container as the Slinky variants, the objects strict against their
// schemas, the workload mounting exactly what --file names, and RBAC with
// the rules of rbac.yaml in the example's own namespace.
{
        const apps = depsRequire('kubernetes-models/apps/v1');
        const file = 'examples/generic-deployment.yaml';
        const docs = check(fs.existsSync(path.join(opts.dir, file)), `${file} exists`)
                ? parseFile(path.join(opts.dir, file)) : [];
        const models = {
                'v1/ConfigMap': core.ConfigMap,
                'apps/v1/Deployment': apps.Deployment,
                'v1/ServiceAccount': core.ServiceAccount,
                'rbac.authorization.k8s.io/v1/Role': rbac.Role,
                'rbac.authorization.k8s.io/v1/RoleBinding': rbac.RoleBinding,
        };
        for (const obj of docs) {
                const Model = models[`${obj.apiVersion}/${obj.kind}`];
                if (check(Model, `${file} ${obj.kind}: a kind this check knows (${obj.apiVersion})`)) {
                        validateStrict(Model, obj, `${file} ${obj.kind}/${obj.metadata && obj.metadata.name}`);
                }
        }
        const of = (kind) => docs.filter((o) => o.kind === kind);
        const ns = new Set(docs.map((o) => o.metadata && o.metadata.namespace));
        check(ns.size === 1 && !ns.has(undefined), `${file}: every object names the same namespace`, [...ns].join(', '));
        const [deploy] = of('Deployment');
        const [exSa] = of('ServiceAccount');
        const [exRole] = of('Role');
        const [exBinding] = of('RoleBinding');
        if (check(exSa && exRole && exBinding, `${file} has a ServiceAccount, a Role and a RoleBinding`)) {
                check(same(exRole.rules, ROLE_RULES), `${file}: the Role grants what rbac.yaml's does and nothing else`,
                        JSON.stringify(exRole.rules));
                check(same(exBinding.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: exRole.metadata.name }) &&
                        same(exBinding.subjects, [{ kind: 'ServiceAccount', name: exSa.metadata.name, namespace: exSa.metadata.namespace }]),
                `${file}: the RoleBinding binds the Role to the ServiceAccount, and only it`);
                check(exSa.automountServiceAccountToken === false, `${file}: the ServiceAccount mounts no token by default`);
        }
        const podSpec = deploy && deploy.spec && deploy.spec.template && deploy.spec.template.spec;
        if (check(podSpec, `${file}: the Deployment has a pod template`)) {
                const agent = (podSpec.initContainers || []).find((c) => c.name === AGENT) || {};
                const files = {};
                for (const a of agent.args || []) {
                        const m = /^--file=([^=]+)=(.*?)(:(enroot-conf|enroot-env|raw))?$/.exec(a);
                        if (m) files[m[1]] = m[2];
                }
                const desired = (agent.volumeMounts || []).find((m) => m.mountPath === argMap(agent.args)['--desired-dir']);
                const volume = desired && (podSpec.volumes || []).find((v) => v.name === desired.name);
                const [cm] = of('ConfigMap');
                check(volume && volume.configMap && cm && volume.configMap.name === cm.metadata.name,
                        `${file}: --desired-dir is the ConfigMap's volume`);
                check(Object.keys(files).length > 0 && cm && Object.keys(files).every((k) => k in (cm.data || {})),
                        `${file}: every --file key is a key of the ConfigMap`, Object.keys(files).join(', '));
                const workloadName = argMap(agent.args)['--workload-container'];
                const workload = (podSpec.containers || []).find((c) => c.name === workloadName);
                check(workload, `${file}: --workload-container names a container of the pod`, workloadName);
                for (const [key, p] of Object.entries(files)) {
                        check(workload && volume && (workload.volumeMounts || []).some((m) => m.name === volume.name &&
                                m.subPath === key && m.mountPath === p),
                        `${file}: ${workloadName} mounts ${key} with subPath at ${p}, the path --file names`);
                }
                check(podSpec.automountServiceAccountToken === false && exSa && podSpec.serviceAccountName === exSa.metadata.name,
                        `${file}: the pod runs as the ServiceAccount and automounts no token`);
                if (volume) {
                        // the pod's ConfigMap volume stands where Slinky's bundle does
                        const own = clone(podSpec);
                        own.volumes = (own.volumes || []).filter((v) => v.name !== volume.name);
                        checkAgent(file, 'Deployment', own, {
                                sidecar: 'native', mode: 'running-root', volume: volume.name, files, bundle: [volume],
                        }, shared);
                }
        }
}

for (const file of files) {
        const docs = parseFile(path.join(opts.dir, file));
        for (const obj of docs) {
                const id = `${file} ${obj.kind}/${obj.metadata && obj.metadata.name}`;
                const Model = {
                        'v1/ServiceAccount': core.ServiceAccount,
                        'rbac.authorization.k8s.io/v1/Role': rbac.Role,
                        'rbac.authorization.k8s.io/v1/RoleBinding': rbac.RoleBinding,
                        'monitoring.coreos.com/v1/PodMonitor': monitoring.PodMonitor,
                        'monitoring.coreos.com/v1/PrometheusRule': monitoring.PrometheusRule,
                        'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy': admission.ValidatingAdmissionPolicy,
                        'admissionregistration.k8s.io/v1/ValidatingAdmissionPolicyBinding': admission.ValidatingAdmissionPolicyBinding,
                        'networking.k8s.io/v1/NetworkPolicy': networking.NetworkPolicy,
                }[`${obj.apiVersion}/${obj.kind}`];
                if (!check(Model, `${id}: a kind this check knows (${obj.apiVersion})`)) continue;
                validateStrict(Model, obj, id);
                objects.push({ file, obj });
        }
}

// --- the files agree with each other ---------------------------------------------------------
const byKind = (kind) => objects.filter((o) => o.obj.kind === kind).map((o) => o.obj);
const CLUSTER_SCOPED = ['ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding'];
const namespaces = new Set(objects.filter((o) => !CLUSTER_SCOPED.includes(o.obj.kind)).map((o) => o.obj.metadata.namespace));
for (const o of objects.filter((x) => CLUSTER_SCOPED.includes(x.obj.kind))) {
        check(o.obj.metadata.namespace === undefined, `${o.file} ${o.obj.kind} is cluster-scoped: no namespace`);
}
check(namespaces.size === 1 && !namespaces.has(undefined), 'every object names the same namespace', [...namespaces].join(', '));
const [sa] = byKind('ServiceAccount');
const [role] = byKind('Role');
const [binding] = byKind('RoleBinding');
if (check(sa && role && binding, 'rbac.yaml has a ServiceAccount, a Role and a RoleBinding')) {
        check(same(role.rules, ROLE_RULES), 'the Role grants get/watch pods, patch pods/status, create events and nothing else',
                JSON.stringify(role.rules));
        check(binding.roleRef.kind === 'Role' && binding.roleRef.name === role.metadata.name, 'the RoleBinding refers to the Role');
        check(same(binding.subjects, [{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: sa.metadata.namespace }]),
                'the RoleBinding binds the ServiceAccount, and only it');
        check(sa.automountServiceAccountToken === false, 'the ServiceAccount mounts no token by default');
        check(same([...shared.serviceAccounts], [sa.metadata.name]), `every pod runs as the ServiceAccount ${sa.metadata.name}`,
                [...shared.serviceAccounts].join(', '));
}
check(shared.images.size === 1, 'every variant runs the same image', [...shared.images].join(', '));
check(shared.portNames.size === 1, 'every variant names the metrics port the same', [...shared.portNames].join(', '));

// AICR's kube-prometheus-stack (release kube-prometheus-stack) selects
// PodMonitors and PrometheusRules by the chart's default label.
for (const kind of ['PodMonitor', 'PrometheusRule']) {
        for (const o of byKind(kind)) {
                check(o.metadata.labels && o.metadata.labels.release === 'kube-prometheus-stack',
                        `${kind}/${o.metadata.name} carries release: kube-prometheus-stack, which AICR's Prometheus selects`);
        }
}
const [podMonitor] = byKind('PodMonitor');
if (check(podMonitor, 'podmonitor.yaml has a PodMonitor')) {
        const exprs = podMonitor.spec.selector.matchExpressions || [];
        check(same(exprs, [{ key: 'app.kubernetes.io/instance', operator: 'In',
                values: [SLINKY_INSTANCES.nodesets, SLINKY_INSTANCES.loginsets] }]),
        'the PodMonitor selects the Slinky worker and login pods');
        const endpoints = podMonitor.spec.podMetricsEndpoints || [];
        check(endpoints.length === 1 && shared.portNames.has(endpoints[0].port), "the PodMonitor scrapes the agent's named port");
        const relabel = (endpoints[0] && endpoints[0].relabelings) || [];
        check(relabel.some((r) => r.targetLabel === 'job' && r.replacement === JOB), `the PodMonitor sets job="${JOB}"`);
        check(relabel.some((r) => r.targetLabel === 'slurm_role'), 'the PodMonitor sets slurm_role');
        check(relabel.some((r) => r.targetLabel === 'node'), 'the PodMonitor sets node');
}

// --- the NetworkPolicy: the agent's port from Prometheus's namespace only, every other port as before
// AICR's kube-prometheus-stack runs in this namespace.
const MONITORING_NAMESPACE = 'monitoring';
const [netpol] = byKind('NetworkPolicy');
if (check(netpol, 'networkpolicy.yaml has a NetworkPolicy')) {
        const spec = netpol.spec;
        check(same(spec.podSelector, { matchExpressions: [{ key: 'app.kubernetes.io/instance', operator: 'In',
                values: [SLINKY_INSTANCES.nodesets, SLINKY_INSTANCES.loginsets] }] }),
        'the NetworkPolicy selects the Slinky worker and login pods, as the PodMonitor does');
        check(same(spec.policyTypes, ['Ingress']), 'the NetworkPolicy restricts ingress only');
        const agentPort = [...shared.portNumbers][0];
        // Which peers reach PROTOCOL/PORT: 'anyone', a list of peers, or nothing.
        const reach = (protocol, port) => {
                const peers = [];
                for (const rule of spec.ingress || []) {
                        const hit = !rule.ports || rule.ports.some((p) => (p.protocol || 'TCP') === protocol &&
                                (p.port === undefined || (typeof p.port === 'number' &&
                                        port >= p.port && port <= (p.endPort || p.port))));
                        if (!hit) continue;
                        if (!rule.from || rule.from.length === 0) return 'anyone';
                        peers.push(...rule.from);
                }
                return peers;
        };
        check(same(reach('TCP', agentPort), [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': MONITORING_NAMESPACE } } }]),
                `the agent's port ${agentPort} admits the namespace ${MONITORING_NAMESPACE} only`, JSON.stringify(reach('TCP', agentPort)));
        const closed = [];
        for (const protocol of ['TCP', 'UDP', 'SCTP']) {
                for (let port = 1; port <= 65535; port++) {
                        if (protocol === 'TCP' && port === agentPort) continue;
                        if (reach(protocol, port) !== 'anyone') closed.push(`${protocol}/${port}`);
                }
        }
        check(closed.length === 0, "every other port stays open to anyone (slurmd's 6818, sshd, srun's ephemeral ports)",
                `${closed.length} closed, first ${closed.slice(0, 3).join(', ')}`);
}

// the variants differ only where they must
const agents = shared.agents;
const plain = agents['agent/plain-container'];
const native = agents['agent/sidecar'];
for (const set of ['nodesets', 'loginsets']) {
        if (plain && native && plain[set] && native[set] && plain[set].agent && native[set].agent) {
                const n = clone(native[set].agent);
                delete n.restartPolicy;
                check(same(n, plain[set].agent), `${set}: the plain container is the native sidecar without restartPolicy`);
                const strip = (ps) => {
                        const x = clone(ps);
                        delete x.initContainers;
                        delete x.containers;
                        return x;
                };
                check(same(strip(native[set].podSpec), strip(plain[set].podSpec)), `${set}: the two variants' podSpecs agree otherwise`);
        }
}
for (const [file, sets] of Object.entries(agents)) {
        if (!sets.nodesets || !sets.loginsets || !sets.nodesets.agent || !sets.loginsets.agent) continue;
        const norm = (a) => {
                const x = clone(a);
                x.args = x.args.filter((s) => !s.startsWith('--target-process='));
                if (x.securityContext) delete x.securityContext.appArmorProfile;
                return x;
        };
        check(same(norm(sets.nodesets.agent), norm(sets.loginsets.agent)),
                `${file}: the worker and login agents differ at most in the target process and AppArmor`);
        check(same(sets.nodesets.podSpec.volumes, sets.loginsets.podSpec.volumes), `${file}: worker and login volumes agree`);
}

// --- the rollout Job (rollout/) ---------------------------------------------------------------
// Its objects pass their schemas; its Role and ClusterRole grant exactly the
// rules of tests/integration/rollout-rbac.yaml (under which the rollout tests
// run) plus kubectl exec into the one pod its --slurm-exec names; the Job runs
// `rollout apply` as that account, under Pod Security "restricted".
{
        const batch = depsRequire('kubernetes-models/batch/v1');
        const dir = path.join(opts.dir, 'rollout');
        const [kz] = parseFile(path.join(dir, 'kustomization.yaml'));
        const resources = (kz && kz.resources) || [];
        check(kz && kz.kind === 'Kustomization' && same(resources, ['rbac.yaml', 'job.yaml']),
                'rollout/kustomization.yaml lists rbac.yaml and job.yaml', JSON.stringify(kz));
        const docs = [];
        for (const file of resources) {
                for (const obj of parseFile(path.join(dir, file))) {
                        const id = `rollout/${file} ${obj.kind}/${obj.metadata && obj.metadata.name}`;
                        const Model = {
                                'v1/ServiceAccount': core.ServiceAccount,
                                'rbac.authorization.k8s.io/v1/Role': rbac.Role,
                                'rbac.authorization.k8s.io/v1/RoleBinding': rbac.RoleBinding,
                                'rbac.authorization.k8s.io/v1/ClusterRole': rbac.ClusterRole,
                                'rbac.authorization.k8s.io/v1/ClusterRoleBinding': rbac.ClusterRoleBinding,
                                'batch/v1/Job': batch.Job,
                        }[`${obj.apiVersion}/${obj.kind}`];
                        if (!check(Model, `${id}: a kind this check knows (${obj.apiVersion})`)) continue;
                        validateStrict(Model, obj, id);
                        docs.push(obj);
                }
        }
        const testRbac = parseFile(path.join(__dirname, '..', 'integration', 'rollout-rbac.yaml'));
        const one = (list, kind) => list.filter((o) => o.kind === kind);
        const [sa] = one(docs, 'ServiceAccount');
        const [role] = one(docs, 'Role');
        const [job] = one(docs, 'Job');
        const ns = sa && sa.metadata.namespace;
        check(docs.filter((o) => !o.kind.startsWith('Cluster')).every((o) => o.metadata.namespace === ns),
                `rollout/: every namespaced object is in ${ns}`);
        const pod = (job && job.spec.template.spec) || {};
        const [container] = pod.containers || [];
        const args = (container && container.args) || [];
        const at = args.indexOf('--slurm-exec');
        const prefix = at >= 0 ? args[at + 1] : '';
        // the words as shell_split_words() gives them: the value holds no quotes or backslashes
        check(prefix && !/['"\\]/.test(prefix), 'rollout/job.yaml: --slurm-exec holds plain words', prefix);
        const words = (prefix || '').split(/\s+/).filter(Boolean);
        const opt = (name, short) => {
                const i = words.findIndex((w) => w === name || w === short);
                return i >= 0 ? words[i + 1] : undefined;
        };
        const end = words.indexOf('--');
        const execPod = words.slice(2, end).filter((w, i, a) => !w.startsWith('-') &&
                !['--namespace', '-n', '--container', '-c'].includes(a[i - 1]))[0];
        check(same(words.slice(0, 2), ['kubectl', 'exec']) && end === words.length - 1 && opt('--namespace', '-n') === ns &&
                execPod, `rollout/job.yaml: --slurm-exec is kubectl exec into a pod of ${ns}, ending in --`, prefix);
        const relayRule = { apiGroups: [''], resources: ['pods/exec'], resourceNames: [execPod], verbs: ['create', 'get'] };
        const rules = (role && role.rules) || [];
        check(rules.some((r) => same(r, relayRule)), `rollout/rbac.yaml: the Role allows kubectl exec into ${execPod} only`,
                JSON.stringify(rules));
        const [testRole] = one(testRbac, 'Role');
        check(testRole && same(rules.filter((r) => !same(r, relayRule)), testRole.rules),
                'rollout/rbac.yaml: the Role\'s other rules are those of tests/integration/rollout-rbac.yaml',
                JSON.stringify(rules));
        const cluster = one(docs, 'ClusterRole');
        const testCluster = one(testRbac, 'ClusterRole');
        check(cluster.length === testCluster.length && cluster.every((c, i) => same(c.rules, testCluster[i].rules)),
                'rollout/rbac.yaml: the ClusterRole\'s rules are those of tests/integration/rollout-rbac.yaml');
        for (const b of [...one(docs, 'RoleBinding'), ...one(docs, 'ClusterRoleBinding')]) {
                const ref = docs.find((o) => o.kind === b.roleRef.kind && o.metadata.name === b.roleRef.name);
                check(ref && same(b.subjects, [{ kind: 'ServiceAccount', name: sa.metadata.name, namespace: ns }]),
                        `rollout/rbac.yaml: ${b.kind}/${b.metadata.name} binds ${b.roleRef.name} to the account`);
        }
        check(job && pod.serviceAccountName === sa.metadata.name && pod.restartPolicy === 'Never' && job.spec.backoffLimit === 0,
                'rollout/job.yaml runs once, as the account');
        check(same(args.slice(0, 2), ['rollout', 'apply']), 'rollout/job.yaml runs rollout apply', JSON.stringify(args));
        const v = container ? podSecurityViolations(pod, container) : ['no container'];
        check(v.length === 0, 'rollout/job.yaml meets Pod Security "restricted"', v.join(', '));
        const env = new Map(((container && container.env) || []).map((e) => [e.name, e]));
        check(env.has('POD_NAME') && env.get('POD_NAME').valueFrom.fieldRef.fieldPath === 'metadata.name',
                'rollout/job.yaml gives the rollout its own pod\'s name (never replaced)');
        if (container) shared.commands.push({ what: 'rollout/job.yaml: the rollout\'s arguments', kind: 'rollout', args });
}

fs.mkdirSync(opts.out, { recursive: true });
fs.writeFileSync(path.join(opts.out, 'commands.json'), JSON.stringify(shared.commands, null, 1));

// --- alerts: metrics, labels, rule files for promtool ----------------------------------------
const [promRule] = byKind('PrometheusRule');
if (check(promRule, 'prometheusrule.yaml has a PrometheusRule')) {
        const known = knownMetrics(loadMetrics(opts.metrics));
        const ruleAlerts = checkRules(promRule.spec, known, headingAnchors(fs.readFileSync(opts.docs, 'utf8')));
        checkRuleTests(known, ruleAlerts);
        fs.writeFileSync(path.join(opts.out, 'prometheusrule.rules.yaml'), YAML.stringify(promRule.spec));
        const bare = clone(promRule.spec);
        for (const g of bare.groups) for (const r of g.rules) delete r.annotations;
        fs.writeFileSync(path.join(opts.out, 'prometheusrule.bare.rules.yaml'), YAML.stringify(bare));
}

// --- the admission policies, on sample requests --------------------------------------------------
// Each expression is evaluated by a CEL implementation (@marcbachmann/cel-js)
// on admission requests shaped as the API server builds them: the pod's name
// in request.name, the caller in request.userInfo (a pod-bound token's user
// carries extra["authentication.kubernetes.io/pod-name"]; a user without
// extra has no extra field), the pod before and after in oldObject and
// object. Variables are evaluated in order into `variables`. A request is
// admitted unless every match condition holds and a validation is false; an
// evaluation error counts as a denial (failurePolicy: Fail). Both policies
// decide every request.
// A header is in one of the layer folders include/LAYER/.
const header = (file) => {
        const top = path.join(__dirname, '..', '..', 'include');
        const layer = fs.readdirSync(top).find((d) => fs.existsSync(path.join(top, d, file)));
        return layer ? fs.readFileSync(path.join(top, layer, file), 'utf8') : '';
};
const define = (file, name) => {
        const m = header(file).match(new RegExp(`#define\\s+${name}\\s+"([^"]*)"`));
        return m ? m[1] : undefined;
};
async function checkPolicy() {
        const policies = byKind('ValidatingAdmissionPolicy');
        const vapBindings = byKind('ValidatingAdmissionPolicyBinding');
        // the names `rollout` checks before it believes a condition, and the agent's condition type
        const names = [define('rollout.h', 'ROLLOUT_POLICY_OWN_POD'), define('rollout.h', 'ROLLOUT_POLICY_CONDITION')];
        const conditionType = define('condition-type.h', 'CONDITION_DEFAULT_TYPE');
        if (!check(names.every(Boolean) && conditionType, 'the policy names and the condition type are read from include/')) return;
        check(same(policies.map((p) => p.metadata.name).sort(), [...names].sort()),
                `validatingadmissionpolicy.yaml has the policies rollout checks: ${names.join(', ')}`,
                policies.map((p) => p.metadata.name).join(', '));
        for (const policy of policies) {
                const name = policy.metadata.name;
                const b = vapBindings.find((x) => x.metadata.name === name);
                check(b && b.spec.policyName === name && same(b.spec.validationActions, ['Deny']),
                        `the binding ${name}, of the same name as rollout expects, enforces the policy (validationActions: Deny)`);
                check(policy.spec.failurePolicy === 'Fail', `the policy ${name} fails closed`);
                check(same(policy.spec.matchConstraints.resourceRules, [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'],
                        resources: ['pods/status'] }]), `the policy ${name} matches updates (and patches) of pods/status, and nothing else`);
        }
        check(vapBindings.length === policies.length, 'one binding per policy');
        const conditionPolicy = policies.find((p) => p.metadata.name === names[1]);
        if (conditionPolicy) {
                const quoted = [...(conditionPolicy.spec.variables || []), ...(conditionPolicy.spec.validations || [])]
                        .some((x) => x.expression.includes(`'${conditionType}'`));
                check(quoted, `the policy ${names[1]} names the agent's condition type '${conditionType}', as rollout checks`);
        }
        const cel = await import(pathToFileURL(depsRequire.resolve('@marcbachmann/cel-js')).href);
        const agentUser = sa ? `system:serviceaccount:${sa.metadata.namespace}:${sa.metadata.name}` : '';
        const cond = (status, time) => ({ type: conditionType, status, reason: status === 'True' ? 'ConfigCurrent' : 'ConfigDrifted',
                message: 'm', lastTransitionTime: time, lastProbeTime: time });
        const ready = { type: 'Ready', status: 'True', lastTransitionTime: '2026-12-01T10:00:00Z' };
        const slurmState = (message) => ({ type: 'SlurmNodeStateIdle', status: 'True', message });
        const pod = (...conditions) => ({ status: conditions.length ? { phase: 'Running', conditions } : { phase: 'Running' } });
        const drifted = cond('False', '2026-12-01T10:00:00Z');
        const current = cond('True', '2026-12-01T10:00:00Z');
        const request = (name, username, extra, before, after) => {
                const userInfo = { username, uid: '5b2c', groups: ['system:serviceaccounts', 'system:authenticated'] };
                if (extra) userInfo.extra = extra;
                return { request: { name, namespace: 'slurm', operation: 'UPDATE', subResource: 'status',
                        resource: { group: '', version: 'v1', resource: 'pods' }, userInfo },
                oldObject: before || pod(ready, drifted), object: after || pod(ready, drifted) };
        };
        const bound = (p) => ({ 'authentication.kubernetes.io/pod-name': [p], 'authentication.kubernetes.io/pod-uid': ['0f0f'] });
        const operator = 'system:serviceaccount:slinky:slurm-operator';
        const kubelet = 'system:node:gpu-1';
        const cases = [
                ['the agent patching its own pod', request('slinky-0', agentUser, bound('slinky-0')), true],
                ['the agent changing its own pod\'s condition', request('slinky-0', agentUser, bound('slinky-0'), pod(ready, current), pod(ready, drifted)), true],
                ['the agent adding its condition to its own pod', request('slinky-0', agentUser, bound('slinky-0'), pod(ready), pod(ready, current)), true],
                ['the agent patching another pod', request('slinky-1', agentUser, bound('slinky-0')), false],
                ['the agent patching a login pod from a worker pod', request('slinky-slurm-login-slinky-7c9', agentUser, bound('slinky-0')), false],
                ['the agent with a token bound to no pod', request('slinky-0', agentUser, null), false],
                ['the agent with other extra only', request('slinky-0', agentUser, { 'authentication.kubernetes.io/credential-id': ['JTI=1'] }), false],
                ['the agent with two pod names', request('slinky-0', agentUser, { 'authentication.kubernetes.io/pod-name': ['slinky-0', 'slinky-1'] }), false],
                ['the slurm operator patching any pod', request('slinky-1', operator, bound('slurm-operator-0')), true],
                ['the slurm operator rewriting its own conditions, the agent\'s kept',
                        request('slinky-1', operator, null, pod(ready, slurmState('a'), drifted), pod(ready, slurmState('b'), drifted)), true],
                ['the slurm operator dropping the agent\'s condition (a stale cache)',
                        request('slinky-1', operator, null, pod(ready, slurmState('a'), drifted), pod(ready, slurmState('b'))), false],
                ['the slurm operator reverting the agent\'s condition (a stale cache)',
                        request('slinky-1', operator, null, pod(ready, drifted), pod(ready, current)), false],
                ['kubelet, with no extra', request('slinky-1', kubelet, null), true],
                ['kubelet changing Ready only', request('slinky-1', kubelet, null, pod(ready, drifted),
                        pod({ ...ready, status: 'False' }, drifted)), true],
                ['kubelet on a pod without the condition', request('slinky-1', kubelet, null, pod(ready), pod()), true],
                ['kubelet on a pod without status conditions', request('slinky-1', kubelet, null, pod(), pod(ready)), true],
                ['another user creating the condition', request('slinky-1', 'admin', null, pod(ready), pod(ready, drifted)), false],
                ['another user changing the condition', request('slinky-1', 'admin', null, pod(ready, current), pod(ready, drifted)), false],
                ['another user changing only its lastProbeTime', request('slinky-1', 'admin', null, pod(ready, drifted),
                        pod(ready, { ...drifted, lastProbeTime: '2026-12-02T10:00:00Z' })), false],
                ['another user removing the condition', request('slinky-1', 'admin', null, pod(ready, drifted), pod(ready)), false],
                ['another user removing every condition', request('slinky-1', 'admin', null, pod(ready, drifted), pod()), false],
                ['another user adding a second condition of the type', request('slinky-1', 'admin', null, pod(ready, drifted),
                        pod(ready, drifted, current)), false],
                ['the agent of another namespace changing the condition',
                        request('slinky-1', 'system:serviceaccount:other:aicr-enroot-agent', bound('x'), pod(ready, current), pod(ready, drifted)), false],
                ['the same name in another namespace, the condition kept', request('slinky-1', 'system:serviceaccount:other:aicr-enroot-agent', bound('x')), true],
        ];
        for (const [what, ctx, allowed] of cases) {
                let decision = true;
                let error = '';
                for (const policy of policies) {
                        try {
                                const c = { ...ctx, variables: {} };
                                const matched = (policy.spec.matchConditions || []).every((m) => cel.evaluate(m.expression, c) === true);
                                if (!matched) continue;
                                for (const v of policy.spec.variables || []) c.variables[v.name] = cel.evaluate(v.expression, c);
                                if (!policy.spec.validations.every((v) => cel.evaluate(v.expression, c) === true)) decision = false;
                        } catch (e) {
                                error = `${policy.metadata.name}: ${e.message}`;
                                decision = false;
                        }
                }
                check(decision === allowed && error === '', `the policies ${allowed ? 'admit' : 'deny'} ${what}`,
                        error || `they ${decision ? 'admit' : 'deny'} it`);
        }
}

checkPolicy().then(
        () => process.exit(failures ? 1 : 0),
        (e) => {
                console.log(`not ok - the admission policy's checks ran: ${e.message}`);
                process.exit(1);
        },
);
