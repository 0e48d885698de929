# SPDX-License-Identifier: Apache-2.0
# Checks of container/kubernetes/grafana/aicr-enroot-agent-dashboard.json, run
# by tests/integration/test-grafana-dashboard.sh:
#   jq -f grafana-dashboard.jq --slurpfile expect EXPECT --slurpfile series SERIES
#      --slurpfile scraped SCRAPED DASHBOARD
# EXPECT is tests/kubernetes/grafana-dashboard.expect.json; SERIES the
# promtool input series; SCRAPED {"drift_since_ms POD FILE": MS, ...}, the
# numbers the expectations take from the scrapes. Prints
#   {"problems": [...], "test": PROMTOOL-TEST}
# problems: one line each, "" never; test: a `promtool test rules` file (JSON
# is YAML) with one promql_expr_test per query of the dashboard.
#
# What is checked of Grafana's dashboard JSON model (what provisioning through
# kube-prometheus-stack's sidecar needs, and what makes the dashboard
# portable): uid, title and schemaVersion set, no dashboard id (Grafana gives
# one); panel ids unique numbers, titles unique, a gridPos and a known panel
# type; every panel and target on the Prometheus data source of the
# ${datasource} template variable, no data source uid written anywhere; every
# target an expr and a unique refId; the template variables datasource,
# namespace and pod; no variable in a query that the dashboard does not define
# or Grafana does not provide.
#
# How the queries are evaluated: Grafana's variables are replaced as a
# dashboard showing every namespace and pod would send them: $namespace and
# $pod by ".*" (their allValue), $__rate_interval by 5m, $__interval by 1m,
# $__range by 1h; a query variable's label_values(SELECTOR, LABEL) by
# count by (LABEL) (SELECTOR). Each is evaluated at 30m.

def ds: {"type": "prometheus", "uid": "${datasource}"};
def builtins: ["__rate_interval", "__interval", "__range"];
def panel_types: ["timeseries", "table", "stat", "bargauge", "gauge", "state-timeline"];
def substitute:
  gsub("\\$\\{?namespace\\}?"; ".*") | gsub("\\$\\{?pod\\}?"; ".*")
  | gsub("\\$\\{?__rate_interval\\}?"; "5m") | gsub("\\$\\{?__interval\\}?"; "1m")
  | gsub("\\$\\{?__range\\}?"; "1h");
def variables_in: [scan("\\$\\{?([a-zA-Z_][a-zA-Z0-9_]*)") | .[0]];
def var_query: if (.query | type) == "object" then .query.query else .query end;

$expect[0] as $expect | $series[0] as $series | $scraped[0] as $scraped
| . as $d
| ([$d.templating.list[]?.name]) as $vars
| [
    # --- the dashboard ----------------------------------------------------------
    (if ($d.uid | type) == "string" and ($d.uid | length) > 0 then empty else "the dashboard has no uid" end),
    (if ($d.title | type) == "string" and ($d.title | length) > 0 then empty else "the dashboard has no title" end),
    (if ($d.schemaVersion | type) == "number" then empty else "the dashboard has no schemaVersion" end),
    (if $d.id == null then empty else "the dashboard has an id: Grafana gives a provisioned dashboard its own" end),
    (if ($d.panels | type) == "array" and ($d.panels | length) > 0 then empty else "the dashboard has no panels" end),
    ([$d.panels[]?.id] | if all(type == "number") and length == (unique | length) then empty
       else "panel ids are not unique numbers: \(tojson)" end),
    ([$d.panels[]?.title] | if all(type == "string") and length == (unique | length) then empty
       else "panel titles are not unique strings: \(tojson)" end),
    ($d | del(.uid) | .. | objects | select(has("uid") and .uid != "${datasource}")
       | "a data source uid is written in the dashboard: \(tojson)"),
    # --- each panel ----------------------------------------------------------------
    ($d.panels[]? | "panel \(.id) (\(.title))" as $w
       | (if .datasource == ds then empty
          else "\($w): its datasource is not the ${datasource} variable: \(.datasource | tojson)" end),
         (if (.type | IN(panel_types[])) then empty else "\($w): panel type \(.type | tojson) is none of \(panel_types | join(", "))" end),
         (if (.gridPos | type) == "object" and ([.gridPos.h, .gridPos.w, .gridPos.x, .gridPos.y] | all(type == "number"))
          then empty else "\($w): no gridPos" end),
         (if (.targets | type) == "array" and (.targets | length) > 0 then empty else "\($w): no targets" end),
         ([.targets[]?.refId] | if all(type == "string") and length == (unique | length) then empty
          else "\($w): target refIds missing or not unique: \(tojson)" end),
         (.targets[]? | "\($w) target \(.refId)" as $t
          | (if (.expr | type) == "string" and (.expr | length) > 0 then empty else "\($t): no expr" end),
            (if .datasource == null or .datasource == ds then empty
             else "\($t): its datasource is not the ${datasource} variable" end),
            ((.expr // "") | variables_in[] | select(IN($vars[], builtins[]) | not)
             | "\($t): $\(.) is no variable of the dashboard"))),
    # --- the template variables --------------------------------------------------------
    ([$d.templating.list[]? | select(.name == "datasource" and .type == "datasource" and .query == "prometheus")]
       | if length == 1 then empty else "no template variable datasource of type datasource for prometheus" end),
    (("namespace", "pod") as $n
       | [$d.templating.list[]? | select(.name == $n)] as $v
       | if ($v | length) != 1 then "no template variable \($n)"
         else $v[0] | (if .type == "query" and .datasource == ds then empty
                       else "variable \($n): not a query on the ${datasource} variable" end),
                      (if .includeAll == true and .allValue == ".*" then empty
                       else "variable \($n): no All option matching every value (allValue \".*\")" end)
         end),
    ($d.templating.list[]? | select(.type == "query") | .name as $n
       | (var_query | variables_in[] | select(IN($vars[], builtins[]) | not)
          | "variable \($n): $\(.) is no variable of the dashboard"),
         (var_query | if test("^label_values\\(.*, *[a-zA-Z_][a-zA-Z0-9_]*\\)$") then empty
          else "variable \($n): \(tojson) is not label_values(SELECTOR, LABEL)" end))
  ] as $schema
# --- the queries and their expected results ----------------------------------------------
| ([$d.panels[]? | .title as $title | .targets[]? | select((.expr | type) == "string")
    | {key: "\($title)\u0000\(.refId)", what: "panel \"\($title)\" target \(.refId)", expr}]
   + [$d.templating.list[]? | select(.type == "query") | (var_query) as $q
      | ($q | capture("^label_values\\((?<sel>.*), *(?<label>[a-zA-Z_][a-zA-Z0-9_]*)\\)$")) as $m
      | select($m != null)
      | {key: "variable \(.name)", what: "variable \(.name)", expr: "count by (\($m.label)) (\($m.sel))"}]
  ) as $queries
| ([$expect | to_entries[] | select(.key != "#")
    | if .key | startswith("variable ") then {key: .key, value: .value}
      else .key as $t | .value | to_entries[] | {key: "\($t)\u0000\(.key)", value: .value} end]
   | from_entries) as $exp
| [
    ($queries[] | select($exp[.key] == null)
     | "\(.what) has no expected result in tests/kubernetes/grafana-dashboard.expect.json"),
    ($queries[] | select($exp[.key] != null and ($exp[.key] | length) == 0)
     | "\(.what) expects no sample: a query that finds nothing would pass; feed it series it finds"),
    ($exp | keys[] | select(IN($queries[].key) | not) | gsub("\u0000"; " target ")
     | "tests/kubernetes/grafana-dashboard.expect.json expects results of \(.), which the dashboard does not have"),
    ($queries[] | (.expr | substitute) as $e | select($e | test("\\$"))
     | "\(.what): a variable is left after substitution: \($e)"),
    ($exp[] | .[] | .value | select(type == "string") | select($scraped[.] == null)
     | "the expected value \(tojson) names nothing the test took from a scrape")
  ] as $coverage
| {
    problems: ($schema + $coverage),
    test: {
      rule_files: [],
      evaluation_interval: "1m",
      tests: [{
        interval: "1m",
        input_series: $series,
        promql_expr_test: [$queries[] | select($exp[.key] != null) | {
          expr: (.expr | substitute),
          eval_time: "30m",
          exp_samples: [$exp[.key][] | {labels, value: (if (.value | type) == "string" then $scraped[.value] else .value end)}]
        }]
      }]
    }
  }
