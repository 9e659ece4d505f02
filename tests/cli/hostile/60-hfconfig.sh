# Hugging Face config.json as the model (issue 38): what the command line
# says about a config it reads.
cat >tiny.json <<'JSON'
{"architectures": ["LlamaForCausalLM"], "hidden_size": 256,
 "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 512,
 "vocab_size": 1000, "rope_theta": 10000.0, "brand_new_field": 1}
JSON
job="run --gpus 8 --global-batch 8"
# No training sequence in a config: say so, and how to give it.
expect 1 "weft: tiny.json: a Hugging Face config gives no training sequence length (max_position_embeddings is the longest context, not the training sequence): give --seq N (seq=\"N\" in the workload's <model>)" $job --model tiny.json
# A field weft does not know: named in a warning, the run goes on (-q: not).
expect 0 "weft: warning: tiny.json: fields weft does not know, taken as not changing the cost: brand_new_field" $job --model tiny.json --seq 128
expect 0 "" $job --model tiny.json --seq 128 -q
# Flags after the config override it; the name is the file's.
"$weft" $job --model tiny.json --seq 128 --json -q >two.json
"$weft" $job --model tiny.json --seq 128 --layers 4 --json -q >four.json
if python3 -c 'import json,sys; a=json.load(open("two.json")); b=json.load(open("four.json")); sys.exit(0 if a["model"] == "tiny" and b["params_total"] > a["params_total"] else 1)' 2>/dev/null; then ok
else ko "--layers after --model tiny.json: $(head -c 300 four.json)"; fi
# An architecture weft does not read, and a missing file.
echo '{"architectures": ["BertModel"]}' >bert.json
expect 1 "weft: --model: bert.json: field 'architectures': architecture 'BertModel' is not supported by this weft; supported: LlamaForCausalLM, MistralForCausalLM, MixtralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, DeepseekV3ForCausalLM, GptOssForCausalLM, Llama4ForConditionalGeneration, Llama4ForCausalLM" $job --model bert.json --seq 128
expect 1 "weft: --model: none.json: cannot open: No such file or directory" $job --model none.json --seq 128
