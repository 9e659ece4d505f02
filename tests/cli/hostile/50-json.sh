# weft run --json stays JSON whatever a workload file names its model: the
# leading "model" field was printed raw and a quote broke the object.
cat >qm.xml <<'XML'
<workload>
  <model name='my "quoted" \model' layers="4" hidden="1024" heads="16" ffn="4096" vocab="32000" seq="2048"/>
  <plan global_batch="32"/>
</workload>
XML
if "$weft" run qm.xml --json -q >qm.json 2>"$tmp/err" &&
   python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["model"] == d["inputs"]["model"]["name"] == "my \"quoted\" \\model"' qm.json
then ok; else ko "a model name with a quote and a backslash in --json"; cat "$tmp/err"; head -c 300 qm.json; fi
