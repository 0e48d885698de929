// SPDX-License-Identifier: Apache-2.0
//
// The agent layered onto real AICR bundles, the way docs/OPERATIONS.md
// ("Deploy with an AICR bundle") deploys it: the slurm chart 1.2.0's values,
// AICR's slinky-slurm values on top (with and without shared storage, and
// with and without resources on the workload containers) coalesced with
// Helm's rules, the NodeSet and LoginSet built from them as the chart's
// templates do, then Helm's post-renderer step: the rendered manifests on the
// standard input of container/kubernetes/agent/post-render.sh (the real
// script, running the real `kubectl kustomize`), its standard output parsed.
// Checks, for every variant and bundle:
//   - every volumeMount of every container (slurmd, login, the agent, init
//     containers) names a volume of the pod template;
//   - nothing of the bundle is lost: every key, list item, volume and mount of
//     what the chart rendered is still there, unchanged, and every other
//     object passes through untouched;
//   - the agent's container, its token volume and its ports are there;
//   - the pod's QoS class, computed with Kubernetes' rules, is what it was
//     without the agent when that was Guaranteed.
// And, as the reason the agent is not a values file: the same podSpec given
// to Helm as values drops the bundle's volumes.
//
// The guide's helm command must be the one this runs: the same post-renderer,
// its variants, the chart and its version.
//
// Usage: node aicr-layering.js --deps DIR --upstream DIR --agent DIR --docs FILE --work DIR
//   --deps      where scripts/setup-node-deps.sh installed the packages
//   --upstream  tests/data/upstream (the chart's and AICR's values)
//   --agent     container/kubernetes/agent (post-render.sh and the variants)
//   --docs      docs/OPERATIONS.md
//   --work      a scratch directory
// Prints "ok - CHECK" or "not ok - CHECK: WHY" per check; exits 1 when any
// failed, 2 on a usage error.
'use strict';

const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const { createRequire } = require('module');

const OPTIONS = ['deps', 'upstream', 'agent', 'docs', 'work'];
const opts = {};
for (let i = 2; i < process.argv.length; i += 2) {
        const key = process.argv[i].replace(/^--/, '');
        if (!OPTIONS.includes(key) || i + 1 >= process.argv.length) {
                console.error(`aicr-layering: bad argument ${process.argv[i]}`);
                process.exit(2);
        }
        opts[key] = process.argv[i + 1];
}
for (const key of OPTIONS) {
        if (!opts[key]) {
                console.error(`aicr-layering: --${key} is required`);
                process.exit(2);
        }
}
const YAML = createRequire(path.join(path.resolve(opts.deps), 'package.json'))('yaml');

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
const isMap = (x) => x !== null && typeof x === 'object' && !Array.isArray(x);
const load = (...p) => YAML.parse(fs.readFileSync(path.join(opts.upstream, ...p), 'utf8'), { version: '1.1' });

// --- Helm's values rules --------------------------------------------------------------------
// Several -f files: helm.sh/helm/v3 pkg/cli/values/options.go mergeMaps: a
// map merges into a map key by key, anything else (a list, a scalar, null)
// replaces what was there.
function mergeValues(base, over) {
        const out = clone(base);
        for (const [k, v] of Object.entries(over)) {
                out[k] = isMap(v) && isMap(out[k]) ? mergeValues(out[k], v) : clone(v);
        }
        return out;
}
// The user's values onto the chart's values.yaml: pkg/chartutil/coalesce.go
// (coalesceTablesFullKey): the user's value wins, maps coalesce recursively,
// lists are replaced whole, and a user's null deletes the chart's key.
function coalesce(user, chart) {
        const out = clone(user);
        for (const [k, v] of Object.entries(chart)) {
                if (!(k in out)) {
                        out[k] = clone(v);
                } else if (out[k] === null) {
                        delete out[k];
                } else if (isMap(out[k]) && isMap(v)) {
                        out[k] = coalesce(out[k], v);
                }
        }
        for (const [k, v] of Object.entries(out)) if (v === null) delete out[k];
        return out;
}

// --- what the slurm chart 1.2.0 renders -----------------------------------------------------
// Read from its templates (nodeset/nodeset-cr.yaml, loginset/loginset-cr.yaml,
// _helpers.tpl): each map entry of nodesets/loginsets over its *Defaults
// (maps merged, lists replaced), named <release>-worker-<key> and
// <release>-login-<key>; spec.slurmd/spec.login are the container values with
// the image formatted; spec.template.spec is podSpec with imagePullSecrets,
// priorityClassName and hostname set. Only what the agent and these checks
// touch is built; the rest of each object is carried over as is.
const RELEASE = 'slinky-slurm';
const NAMESPACE = 'slurm';
function formatImage(image) {
        if (typeof image === 'string') return image;
        return image.digest ? `${image.repository}@${image.digest}` : `${image.repository}:${image.tag}`;
}
function container(values, name) {
        const c = clone(values);
        c.image = formatImage(c.image);
        c.name = name;
        return c;
}
function podTemplateSpec(podSpec, key, keepEmptyLists) {
        const spec = clone(podSpec || {});
        spec.imagePullSecrets = spec.imagePullSecrets || [];
        spec.priorityClassName = spec.priorityClassName || '';
        if (!keepEmptyLists) {
                for (const [k, v] of Object.entries(spec)) {
                        if ((Array.isArray(v) && v.length === 0) || (isMap(v) && Object.keys(v).length === 0)) delete spec[k];
                }
        }
        return spec;
}
function render(values, keepEmptyLists) {
        const objects = [];
        for (const [key, entry] of Object.entries(values.nodesets || {})) {
                const ns = mergeValues(values.nodesetDefaults, entry);
                if (!ns.enabled) continue;
                const spec = podTemplateSpec(ns.podSpec, key, keepEmptyLists);
                spec.hostname = `${key}-`;
                objects.push({
                        apiVersion: 'slinky.slurm.net/v1beta1', kind: 'NodeSet',
                        metadata: { name: `${RELEASE}-worker-${key}`, namespace: NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'slurm' } },
                        spec: {
                                controllerRef: { name: RELEASE, namespace: NAMESPACE },
                                replicas: ns.replicas, scalingMode: ns.scalingMode,
                                slurmd: container(ns.slurmd, 'slurmd'), logfile: container(ns.logfile, 'logfile'),
                                template: { spec }, updateStrategy: ns.updateStrategy,
                        },
                });
        }
        for (const [key, entry] of Object.entries(values.loginsets || {})) {
                const ls = mergeValues(values.loginsetDefaults, entry);
                if (!ls.enabled) continue;
                objects.push({
                        apiVersion: 'slinky.slurm.net/v1beta1', kind: 'LoginSet',
                        metadata: { name: `${RELEASE}-login-${key}`, namespace: NAMESPACE, labels: { 'app.kubernetes.io/part-of': 'slurm' } },
                        spec: {
                                controllerRef: { name: RELEASE, namespace: NAMESPACE }, replicas: ls.replicas,
                                login: container(ls.login, 'login'), initconf: container(ls.initconf, 'initconf'),
                                template: { spec: podTemplateSpec(ls.podSpec, key, keepEmptyLists) },
                                service: ls.service,
                        },
                });
        }
        // something that is neither: it must pass through untouched
        objects.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `${RELEASE}-config`, namespace: NAMESPACE },
                data: { 'cgroup.conf': values.configFiles['cgroup.conf'] } });
        return objects;
}
// Helm hands a post-renderer one stream, documents introduced by "---" and a
// "# Source:" comment.
function helmStream(objects) {
        return objects.map((o) => `---\n# Source: slurm/templates/${o.kind.toLowerCase()}.yaml\n${YAML.stringify(o)}`).join('');
}

// --- the pods the Slinky operator builds from them ------------------------------------------
// Its own containers first (slurmd and the log sidecar for a NodeSet; login,
// and initconf as an init container, for a LoginSet), then the template's
// containers and init containers appended, volumes merged by name. Only the
// parts QoS and the mount checks read.
function podOf(obj) {
        const t = obj.spec.template.spec;
        const own = obj.kind === 'NodeSet' ? [obj.spec.slurmd, obj.spec.logfile] : [obj.spec.login];
        const ownInit = obj.kind === 'LoginSet' ? [obj.spec.initconf] : [];
        return { spec: { ...t, containers: [...own, ...(t.containers || [])], initContainers: [...ownInit, ...(t.initContainers || [])] } };
}

// Kubernetes' QoS class (pkg/apis/core/helper/qos/qos.go, GetPodQOS): only
// cpu and memory count; every container, init containers (native sidecars
// included) too. BestEffort: none has a request or a limit. Guaranteed:
// every container has cpu and memory limits, and its requests (defaulted to
// the limits when unset, as the API server does) equal them. Else Burstable.
// Pod-level resources (spec.resources), when set, decide instead.
function quantity(q) {
        const m = String(q).match(/^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/);
        if (!m) throw new Error(`a quantity this check cannot read: ${q}`);
        return parseFloat(m[1]) * ({ m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40 }[m[2]] || 1);
}
function qosClass(pod) {
        const QOS = ['cpu', 'memory'];
        const podRes = pod.spec.resources || {};
        const all = (podRes.requests && Object.keys(podRes.requests).length) || (podRes.limits && Object.keys(podRes.limits).length)
                ? [{ resources: podRes }]
                : [...pod.spec.containers, ...pod.spec.initContainers];
        let any = false;
        let guaranteed = true;
        for (const c of all) {
                const limits = (c.resources && c.resources.limits) || {};
                const requests = { ...limits, ...((c.resources && c.resources.requests) || {}) };
                for (const r of QOS) {
                        if (r in requests || r in limits) any = true;
                        if (!(r in limits) || quantity(requests[r]) !== quantity(limits[r])) guaranteed = false;
                }
        }
        return !any ? 'BestEffort' : guaranteed ? 'Guaranteed' : 'Burstable';
}

// --- nothing lost ---------------------------------------------------------------------------
// Every key of `before` is in `after` with the same value, recursively; every
// item of a list of `before` is in the same list of `after`, unchanged.
function lost(before, after, where = '') {
        if (Array.isArray(before)) {
                if (!Array.isArray(after)) return [`${where} is no longer a list`];
                return before.filter((item) => !after.some((a) => same(canon(a), canon(item))))
                        .map((item) => `${where}[${item && item.name ? item.name : JSON.stringify(item)}]`);
        }
        if (isMap(before)) {
                if (!isMap(after)) return [`${where} is no longer a map`];
                return Object.keys(before).flatMap((k) => (k in after ? lost(before[k], after[k], `${where}.${k}`) : [`${where}.${k}`]));
        }
        return same(before, after) ? [] : [`${where}: ${JSON.stringify(before)} became ${JSON.stringify(after)}`];
}
// key order is not meaning
function canon(x) {
        if (Array.isArray(x)) return x.map(canon);
        if (isMap(x)) return Object.fromEntries(Object.keys(x).sort().map((k) => [k, canon(x[k])]));
        return x;
}

// --- the checks ------------------------------------------------------------------------------
const chart = load('slinky-slurm-1.2.0', 'values.yaml');
const chartMeta = load('slinky-slurm-1.2.0', 'Chart.yaml');
check(chartMeta.name === 'slurm' && chartMeta.version === '1.2.0', 'the chart is slurm 1.2.0, the version the guide pins');
const BUNDLES = {
        'AICR slinky-slurm values': load('aicr', 'slinky-slurm-values.yaml'),
        'AICR slinky-slurm values, shared storage on': load('aicr', 'slinky-slurm-values-storage-enabled.yaml'),
};
// Guaranteed workload containers: requests equal to limits on every container
// the operator runs (an integer CPU count for slurmd, as static CPU pinning wants).
const GUARANTEED = {
        nodesets: { slinky: {
                slurmd: { resources: { requests: { cpu: '8', memory: '32Gi' }, limits: { cpu: '8', memory: '32Gi' } } },
                logfile: { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } },
        } },
        loginsets: { slinky: {
                login: { resources: { requests: { cpu: '2', memory: '4Gi' }, limits: { cpu: '2', memory: '4Gi' } } },
                initconf: { resources: { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } } },
        } },
};
const VARIANTS = {
        sidecar: { list: 'initContainers', restartPolicy: 'Always' },
        'plain-container': { list: 'containers', restartPolicy: undefined },
        'target-process': { list: 'initContainers', restartPolicy: 'Always' },
};
const AGENT = 'aicr-enroot-agent';
const TOKEN_VOLUME = 'aicr-enroot-agent-token';
const postRender = path.join(opts.agent, 'post-render.sh');

let n = 0;
for (const [bundleName, bundle] of Object.entries(BUNDLES)) {
        for (const [resName, extra] of [['no resources on slurmd', {}], ['Guaranteed slurmd', GUARANTEED]]) {
                const values = coalesce(mergeValues(bundle, extra), chart);
                for (const keepEmptyLists of [true, false]) {
                        const before = render(values, keepEmptyLists);
                        const stream = helmStream(before);
                        const shape = keepEmptyLists ? "the chart's empty lists rendered" : 'empty lists left out';
                        for (const [variant, expect] of Object.entries(VARIANTS)) {
                                const what = `${bundleName}, ${resName}, ${shape}, ${variant}`;
                                let out;
                                try {
                                        // as Helm 3 runs it: the manifests on standard input, the result on standard output
                                        out = execFileSync(postRender, variant === 'sidecar' ? [] : [variant],
                                                { input: stream, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
                                } catch (e) {
                                        check(false, `${what}: post-render.sh succeeds`, String(e.stderr || e.message).trim());
                                        continue;
                                }
                                fs.writeFileSync(path.join(opts.work, `rendered-${n++}.yaml`), out);
                                const after = YAML.parseAllDocuments(out).map((d) => d.toJS()).filter(Boolean);
                                check(after.length === before.length, `${what}: every object comes back`, `${before.length} in, ${after.length} out`);
                                for (const obj of before) {
                                        const id = `${obj.kind}/${obj.metadata.name}`;
                                        const found = after.filter((o) => o.kind === obj.kind && o.metadata.name === obj.metadata.name);
                                        if (!check(found.length === 1, `${what}: ${id} comes back once`)) continue;
                                        const [res] = found;
                                        const gone = lost(obj, res);
                                        check(gone.length === 0, `${what}: nothing of ${id} is lost`, gone.join(', '));
                                        if (obj.kind === 'ConfigMap') {
                                                check(same(canon(obj), canon(res)), `${what}: ${id} passes through untouched`);
                                                continue;
                                        }
                                        const pod = podOf(res);
                                        const volumes = new Set((pod.spec.volumes || []).map((v) => v.name));
                                        for (const c of [...pod.spec.containers, ...pod.spec.initContainers]) {
                                                const missing = (c.volumeMounts || []).filter((m) => !volumes.has(m.name));
                                                check(missing.length === 0, `${what}: every mount of ${id}'s ${c.name} has its volume`,
                                                        missing.map((m) => `${m.mountPath} (${m.name})`).join(', '));
                                        }
                                        const t = res.spec.template.spec;
                                        const agent = (t[expect.list] || []).find((c) => c.name === AGENT);
                                        if (check(agent, `${what}: ${id} has the agent in ${expect.list}`)) {
                                                check(agent.restartPolicy === expect.restartPolicy, `${what}: ${id}'s agent restartPolicy is ${expect.restartPolicy}`);
                                                check((agent.ports || []).some((p) => p.name === 'agent-metrics' && p.containerPort === 9100),
                                                        `${what}: ${id}'s agent has its port agent-metrics (9100)`);
                                                check((agent.volumeMounts || []).some((m) => m.name === TOKEN_VOLUME), `${what}: ${id}'s agent mounts its token`);
                                        }
                                        const token = (t.volumes || []).find((v) => v.name === TOKEN_VOLUME);
                                        check(token && token.projected && token.projected.sources.some((s) => s.serviceAccountToken),
                                                `${what}: ${id} has the agent's projected token volume`);
                                        check(t.serviceAccountName === AGENT, `${what}: ${id}'s pods run as ${AGENT}`);
                                        const agents = [...(t.containers || []), ...(t.initContainers || [])].filter((c) => c.name === AGENT);
                                        check(agents.length === 1, `${what}: ${id} has one agent`);
                                        // QoS: Guaranteed stays Guaranteed
                                        const qosBefore = qosClass(podOf(obj));
                                        const qosAfter = qosClass(pod);
                                        const want = qosBefore === 'Guaranteed' ? 'Guaranteed' : 'Burstable';
                                        check(qosAfter === want, `${what}: ${id}'s pods are ${want} (${qosBefore} without the agent)`, qosAfter);
                                        if (resName === 'Guaranteed slurmd') {
                                                check(qosBefore === 'Guaranteed', `${what}: ${id}'s pods are Guaranteed without the agent`, qosBefore);
                                        }
                                }
                        }
                }
        }
        // Why the agent is not a values file: given to Helm as values, the
        // same podSpec replaces the bundle's volumes list.
        const patch = YAML.parse(fs.readFileSync(path.join(opts.agent, 'sidecar', 'nodeset.yaml'), 'utf8')).spec.template.spec;
        const asValues = coalesce(mergeValues(bundle, { nodesets: { slinky: { podSpec: patch } } }), chart);
        const kept = asValues.nodesets.slinky.podSpec.volumes.map((v) => v.name);
        const dropped = bundle.nodesets.slinky.podSpec.volumes.map((v) => v.name).filter((v) => !kept.includes(v));
        check(dropped.length > 0, `${bundleName}: as Helm values, the agent's podSpec would drop the bundle's volumes (${dropped.join(', ')})`);
}

// --- the guide's command is the one run here --------------------------------------------------
{
        const guide = fs.readFileSync(opts.docs, 'utf8');
        const section = guide.slice(guide.indexOf('## Deploy with an AICR bundle'), guide.indexOf('## What each option'));
        const cmd = (section.match(/helm upgrade --install slinky-slurm (?:[^\n]*\\\n)*[^\n]*/) || [''])[0].replace(/\\\n\s*/g, ' ');
        check(cmd !== '', 'the guide shows the helm command that deploys slinky-slurm');
        check(cmd.includes(` oci://ghcr.io/slinkyproject/charts/${chartMeta.name} --version ${chartMeta.version} `),
                `the guide's command pins the chart this test renders (${chartMeta.name} ${chartMeta.version})`, cmd);
        check(cmd.includes('--post-renderer "$SRC/container/kubernetes/agent/post-render.sh"'),
                "the guide's command runs the post-renderer this test runs", cmd);
        const args = [...section.matchAll(/--post-renderer-args ([a-z-]+)/g)].map((m) => m[1]);
        check(same([...new Set(args)].sort(), Object.keys(VARIANTS).filter((v) => v !== 'sidecar').sort()),
                "the guide's --post-renderer-args name the other variants this test runs", args.join(', '));
        check(/helm plugin install "\$SRC\/container\/kubernetes\/agent"/.test(section) &&
                YAML.parse(fs.readFileSync(path.join(opts.agent, 'plugin.yaml'), 'utf8')).name === 'aicr-enroot-agent' &&
                section.includes('--post-renderer aicr-enroot-agent'), "the guide's Helm 4 plugin is agent/plugin.yaml, by its name");
}

process.exit(failures ? 1 : 0);
