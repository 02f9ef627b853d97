"""The C library through ctypes: the structs of include/encdec.h, the
functions' signatures, and errors as exceptions.

ctypes releases the GIL for every call into a CDLL, so transcriptions and
generations run while other Python threads go on; callbacks from the
library's threads take the GIL back for as long as they run.
"""

import ctypes
import os
from ctypes import (CFUNCTYPE, POINTER, Structure, c_char_p, c_double, c_float, c_int,
                    c_longlong, c_size_t, c_uint64, c_void_p)

# ---- the library --------------------------------------------------------------


def _load():
    path = os.environ.get("ENCDEC_LIBRARY") or os.path.join(os.path.dirname(__file__),
                                                            "libencdec.so.0")
    try:
        return ctypes.CDLL(path)
    except OSError as e:
        raise ImportError(f"encdec: cannot load the C library {path}: {e}") from None


lib = _load()

# ---- errors ---------------------------------------------------------------------

OK, ERR_ARG, ERR_NOMEM, ERR_IO, ERR_NO_MODEL, ERR_FORMAT, ERR_DTYPE, ERR_SHAPE, \
    ERR_CONFIG, ERR_AUDIO, ERR_TOKENIZER, ERR_THREADS, ERR_CANCELLED, ERR_DEVICE = range(14)


class EncdecError(RuntimeError):
    """A failure the library reported: `status` is its encdec_status number,
    `status_name` its name ("no model found", ...), the message its detail."""

    def __init__(self, status, message):
        self.status = status
        self.status_name = lib.encdec_status_str(status).decode()
        super().__init__(message)


class ArgumentError(EncdecError, ValueError):
    """ENCDEC_ERR_ARG: an argument out of range (also a ValueError)."""


class CancelledError(EncdecError):
    """ENCDEC_ERR_CANCELLED: the request was cancelled."""


def error(status, what=None):
    """The exception for a failed call (read on the thread that made it:
    the library keeps the detail per thread)."""
    detail = lib.encdec_last_error().decode("utf-8", "replace")
    name = lib.encdec_status_str(status).decode()
    msg = detail if name in detail else f"{name}: {detail}" if detail else name
    if what:
        msg = f"{what}: {msg}"
    cls = {ERR_ARG: ArgumentError, ERR_CANCELLED: CancelledError}.get(status, EncdecError)
    return cls(status, msg)


def check(status, what=None):
    if status:
        raise error(status, what)


# ---- structs (field for field as in include/encdec.h) -------------------------


class ModelParams(Structure):
    _fields_ = [("compute", c_int), ("isa", c_int), ("no_weight_check", c_int),
                ("device", c_int), ("device_index", c_int), ("no_logit_screen", c_int)]


class ModelInfo(Structure):
    _fields_ = [("family", c_char_p), ("model_type", c_char_p), ("format", c_char_p),
                ("n_mels", c_int), ("n_audio_ctx", c_int), ("n_text_ctx", c_int),
                ("d_model", c_int), ("n_enc_layer", c_int), ("n_dec_layer", c_int),
                ("n_head", c_int), ("n_vocab", c_int), ("multilingual", c_int),
                ("weight_bytes", c_size_t), ("compute", c_char_p), ("isa", c_char_p),
                ("device", c_char_p), ("source_language", c_char_p),
                ("target_language", c_char_p), ("source_bos", c_int), ("source_eos", c_int)]


class SessionParams(Structure):
    _fields_ = [("n_threads", c_int), ("cross_kv", c_int)]


class AudioParams(Structure):
    _fields_ = [("max_seconds", c_double), ("strict", c_int), ("max_stream_bytes", c_size_t),
                ("fifo_wait_s", c_double)]


class AudioInfo(Structure):
    _fields_ = [("sample_rate", c_int), ("channels", c_int), ("seconds", c_double),
                ("truncated", c_int), ("expected_seconds", c_double), ("stream", c_int)]


class Token(Structure):
    _fields_ = [("id", c_int), ("logprob", c_float), ("text", c_char_p), ("window", c_int)]


class Word(Structure):
    _fields_ = [("word", c_char_p), ("start", c_double), ("end", c_double),
                ("probability", c_float)]


class Segment(Structure):
    _fields_ = [("id", c_int), ("seek", c_int), ("start", c_double), ("end", c_double),
                ("text", c_char_p), ("n_tokens", c_int), ("tokens", POINTER(Token)),
                ("temperature", c_float), ("avg_logprob", c_float),
                ("compression_ratio", c_float), ("no_speech_prob", c_float),
                ("n_words", c_int), ("words", POINTER(Word)), ("all_failed", c_int)]


SEGMENT_FN = CFUNCTYPE(c_int, POINTER(Segment), c_void_p)
PROGRESS_FN = CFUNCTYPE(None, c_double, c_double, c_void_p)
LANGUAGE_FN = CFUNCTYPE(None, c_char_p, c_float, c_void_p)


class VadParams(Structure):
    _fields_ = [("threshold", c_float), ("neg_threshold", c_float),
                ("min_speech_duration_ms", c_int), ("max_speech_duration_s", c_float),
                ("min_silence_duration_ms", c_int), ("speech_pad_ms", c_int)]


class Span(Structure):
    _fields_ = [("start", c_size_t), ("end", c_size_t)]


class TextLanguage(Structure):
    _fields_ = [("language", c_char_p), ("probability", c_double)]


class TranscribeParams(Structure):
    _fields_ = [("kv_mode", c_int), ("language", c_char_p), ("translate", c_int),
                ("max_tokens", c_int), ("beam_size", c_int), ("timestamps", c_int),
                ("patience", c_float), ("best_of", c_int), ("temperature", c_float),
                ("temperature_increment", c_float), ("compression_ratio_threshold", c_float),
                ("logprob_threshold", c_float), ("no_speech_threshold", c_float),
                ("condition_on_previous_text", c_int), ("initial_prompt", c_char_p),
                ("prefix", c_char_p), ("clip_timestamps", POINTER(c_double)),
                ("n_clip_timestamps", c_int), ("word_timestamps", c_int),
                ("prepend_punctuations", c_char_p), ("append_punctuations", c_char_p),
                ("loop_detection", c_int), ("silence_threshold_db", c_float),
                ("seed", c_uint64), ("on_segment", SEGMENT_FN), ("on_progress", PROGRESS_FN),
                ("user", c_void_p), ("on_language", LANGUAGE_FN), ("fallback_keep_last", c_int),
                ("vad", c_void_p), ("vad_params", VadParams), ("speech", POINTER(Span)),
                ("n_speech", c_int), ("hotwords", c_char_p), ("repetition_penalty", c_float),
                ("no_repeat_ngram_size", c_int), ("hallucination_silence_threshold", c_float),
                ("chunk_length", c_float), ("language_detection_segments", c_int),
                ("language_detection_threshold", c_float), ("multilingual", c_int),
                ("detect_language_only", c_int), ("initial_prompt_tokens", POINTER(c_int)),
                ("n_initial_prompt_tokens", c_int), ("whole_windows", c_int),
                ("min_text_rate", c_float)]


class LiveParams(Structure):
    _fields_ = [("sample_rate", c_int), ("step_s", c_double), ("idle_step_s", c_double),
                ("max_step_s", c_double),
                ("agreement", c_int),
                ("min_silence_s", c_double), ("vad", c_void_p), ("silence_db", c_float),
                ("max_buffer_s", c_double), ("tp", TranscribeParams), ("catch_up_s", c_double)]


class LiveEvent(Structure):
    _fields_ = [("kind", c_int), ("text", c_char_p), ("start", c_double), ("end", c_double),
                ("utterance_end", c_int), ("status", c_int)]


class LiveStats(Structure):
    _fields_ = [("fed_s", c_double), ("buffered_s", c_double), ("max_buffered_s", c_double),
                ("decodes", c_int), ("skipped", c_int), ("failed", c_int), ("finals", c_int)]


class Timings(Structure):
    _fields_ = [("mel_ms", c_double), ("encoder_ms", c_double), ("decode_ms", c_double),
                ("n_windows", c_int), ("n_tokens", c_int), ("n_steps", c_int),
                ("align_ms", c_double), ("n_encodes", c_int), ("n_decodes", c_int),
                ("n_fallbacks", c_int), ("n_loops", c_int), ("audio_seconds", c_double),
                ("n_input_tokens", c_int), ("speech_seconds", c_double), ("vad_ms", c_double)]


class Sequence(Structure):
    _fields_ = [("input", c_int), ("rank", c_int), ("text", c_char_p), ("score", c_float),
                ("n_tokens", c_int), ("tokens", POINTER(Token))]


class EngineParams(Structure):
    _fields_ = [("n_threads", c_int), ("max_active", c_int), ("cross_kv", c_int),
                ("max_new_tokens", c_int)]


class BatchParams(Structure):
    _fields_ = [("batch_size", c_int), ("chunk_length", c_float), ("language_per_chunk", c_int),
                ("cancel", POINTER(c_int))]


class EngineStats(Structure):
    _fields_ = [("steps", c_longlong), ("rows", c_longlong), ("passes", c_longlong),
                ("encodes", c_longlong), ("active", c_int), ("waiting", c_int),
                ("decoding", c_int), ("last_rows", c_int), ("batch_hist", c_longlong * 9),
                ("requests", c_int)]


TOKEN_FN = CFUNCTYPE(c_int, c_int, c_int, c_int, c_float, c_char_p, c_void_p)


class GenerateParams(Structure):
    _fields_ = [("kv_mode", c_int), ("max_new_tokens", c_int), ("num_beams", c_int),
                ("length_penalty", c_float), ("early_stopping", c_int),
                ("num_return_sequences", c_int), ("do_sample", c_int), ("temperature", c_float),
                ("top_k", c_int), ("top_p", c_float), ("seed", c_uint64), ("truncate", c_int),
                ("on_token", TOKEN_FN), ("user", c_void_p), ("src_lang", c_char_p),
                ("tgt_lang", c_char_p), ("repetition_penalty", c_float),
                ("no_repeat_ngram_size", c_int), ("suppress_tokens", POINTER(c_int)),
                ("n_suppress_tokens", c_int), ("min_new_tokens", c_int),
                ("forced_eos", c_int), ("ctranslate2_rules", c_int), ("return_attention", c_int),
                ("replace_unknowns", c_int), ("patience", c_float),
                ("end_tokens", POINTER(c_int)), ("n_end_tokens", c_int),
                ("coverage_penalty", c_float), ("return_alternatives", c_int),
                ("min_alternative_prob", c_float), ("prefix_bias_beta", c_float),
                ("return_logits", c_int)]


# The structs checked against the C compiler's layout by tests/python/test_layout.py.
STRUCTS = {
    "encdec_model_params": ModelParams, "encdec_model_info": ModelInfo,
    "encdec_session_params": SessionParams, "encdec_audio_params": AudioParams,
    "encdec_audio_info": AudioInfo, "encdec_token": Token, "encdec_word": Word,
    "encdec_segment": Segment, "encdec_transcribe_params": TranscribeParams,
    "encdec_timings": Timings, "encdec_sequence": Sequence,
    "encdec_engine_params": EngineParams, "encdec_engine_stats": EngineStats,
    "encdec_batch_params": BatchParams,
    "encdec_generate_params": GenerateParams, "encdec_vad_params": VadParams,
    "encdec_span": Span, "encdec_live_params": LiveParams, "encdec_live_event": LiveEvent,
    "encdec_live_stats": LiveStats, "encdec_text_language": TextLanguage,
}

# ---- functions ------------------------------------------------------------------

P = POINTER
_status = c_int


def _fn(name, restype, *argtypes):
    f = getattr(lib, name)
    f.restype = restype
    f.argtypes = argtypes
    return f


_fn("encdec_status_str", c_char_p, c_int)
_fn("encdec_last_error", c_char_p)
_fn("encdec_build_info", c_char_p)
_fn("encdec_model_default_params", ModelParams)
_fn("encdec_model_load_ex", _status, c_char_p, P(ModelParams), P(c_void_p))
_fn("encdec_model_free", None, c_void_p)
_fn("encdec_model_get_info", None, c_void_p, P(ModelInfo))
_fn("encdec_model_language", c_char_p, c_void_p, c_int)
_fn("encdec_model_find_language", c_int, c_void_p, c_char_p)
_fn("encdec_language_name", c_char_p, c_char_p)
_fn("encdec_language_code", c_char_p, c_int)
_fn("encdec_isa_parse", c_int, c_char_p)
_fn("encdec_device_count", c_int, c_int)
_fn("encdec_session_default_params", SessionParams)
_fn("encdec_session_new", _status, c_void_p, P(SessionParams), P(c_void_p))
_fn("encdec_session_free", None, c_void_p)
_fn("encdec_audio_default_params", AudioParams)
_fn("encdec_audio_load_ex", _status, c_char_p, P(AudioParams), P(P(c_float)), P(c_size_t),
    P(AudioInfo))
_fn("encdec_audio_load_memory", _status, c_void_p, c_size_t, c_double, P(P(c_float)),
    P(c_size_t))
_fn("encdec_free", None, c_void_p)
_fn("encdec_transcribe_default_params", TranscribeParams)
_fn("encdec_engine_default_params", EngineParams)
_fn("encdec_engine_new", _status, c_void_p, P(EngineParams), P(c_void_p))
_fn("encdec_engine_free", None, c_void_p)
_fn("encdec_engine_transcribe", _status, c_void_p, P(c_float), c_size_t, P(TranscribeParams),
    P(c_void_p))
_fn("encdec_batch_default_params", BatchParams)
_fn("encdec_engine_transcribe_batched", _status, c_void_p, P(c_float), c_size_t,
    P(TranscribeParams), P(BatchParams), P(c_void_p))
_fn("encdec_request_done", c_int, c_void_p)
_fn("encdec_request_wait", _status, c_void_p, P(c_void_p))
_fn("encdec_request_cancel", None, c_void_p)
_fn("encdec_request_free", None, c_void_p)
_fn("encdec_engine_get_stats", None, c_void_p, P(EngineStats))
_fn("encdec_generate_default_params", GenerateParams)
_fn("encdec_generate_model_params", GenerateParams, c_void_p)
_fn("encdec_generate", _status, c_void_p, P(c_char_p), c_int, P(GenerateParams), P(c_void_p))
_fn("encdec_engine_generate", _status, c_void_p, c_char_p, P(GenerateParams), P(c_void_p))
_fn("encdec_engine_generate_ids", _status, c_void_p, P(c_int), c_int, P(c_int), c_int,
    P(GenerateParams), P(c_void_p))
_fn("encdec_text_attention", _status, c_void_p, P(c_int), c_int, P(c_int), c_int, P(c_float))
_fn("encdec_text_attention_batch", _status, c_void_p, c_int, P(P(c_int)), P(c_int), P(P(c_int)), P(c_int),
    P(P(c_float)))
_fn("encdec_text_score", _status, c_void_p, P(c_int), c_int, P(c_int), c_int, P(c_float))
_fn("encdec_text_score_batch", _status, c_void_p, c_int, P(P(c_int)), P(c_int), P(P(c_int)), P(c_int),
    P(P(c_float)))
_fn("encdec_model_token_id", c_int, c_void_p, c_char_p)
_fn("encdec_model_source_token_id", c_int, c_void_p, c_char_p)
_fn("encdec_model_token", c_char_p, c_void_p, c_int)
_fn("encdec_result_text", c_char_p, c_void_p)
_fn("encdec_result_n_sequences", c_int, c_void_p)
_fn("encdec_result_sequence", P(Sequence), c_void_p, c_int)
_fn("encdec_result_n_segments", c_int, c_void_p)
_fn("encdec_result_segment", P(Segment), c_void_p, c_int)
_fn("encdec_result_language", c_char_p, c_void_p)
_fn("encdec_result_n_language_probs", c_int, c_void_p)
_fn("encdec_result_language_probability", c_float, c_void_p)
_fn("encdec_result_language_prob", c_int, c_void_p, c_int, P(c_char_p), P(c_float))
_fn("encdec_result_timings", P(Timings), c_void_p)
_fn("encdec_result_attention", P(c_float), c_void_p, c_int, P(c_int))
_fn("encdec_result_logits", P(c_float), c_void_p, c_int, P(c_int))
_fn("encdec_result_free", None, c_void_p)
_fn("encdec_live_default_params", LiveParams)
_fn("encdec_live_new", _status, c_void_p, P(LiveParams), P(c_void_p))
_fn("encdec_live_feed", _status, c_void_p, P(c_float), c_size_t)
_fn("encdec_live_finish", _status, c_void_p)
_fn("encdec_live_next", c_int, c_void_p, P(LiveEvent), c_int)
_fn("encdec_live_get_stats", None, c_void_p, P(LiveStats))
_fn("encdec_live_backlog", c_double, c_void_p)
_fn("encdec_live_ahead", c_double, c_void_p)
_fn("encdec_live_free", None, c_void_p)
_fn("encdec_vad_default_params", VadParams)
_fn("encdec_vad_load", _status, c_char_p, P(c_void_p))
_fn("encdec_langid_load", _status, c_char_p, P(c_void_p))
_fn("encdec_langid_free", None, c_void_p)
_fn("encdec_langid_detect", _status, c_void_p, c_char_p, P(TextLanguage), c_int, P(c_int))
_fn("encdec_langid_words", _status, c_void_p, c_char_p, P(c_char_p), c_int, P(TextLanguage), P(c_int))
_fn("encdec_vad_free", None, c_void_p)
_fn("encdec_vad_speech", _status, c_void_p, P(c_float), c_size_t, P(VadParams), c_int,
    P(P(Span)), P(c_int))
_fn("encdec_vad_probs", _status, c_void_p, P(c_float), c_size_t, c_int, P(P(c_float)),
    P(c_size_t))

COMPUTE = {"f32": 0, "bf16": 1, "int8": 2}
DEVICE = {"cpu": 0, "cuda": 1}
KV_TYPE = {"f32": 0, "f16": 1, "bf16": 2}


def text(b):
    """A C string from the library as str (invalid UTF-8 replaced: a
    token's bytes may be part of a character)."""
    return b.decode("utf-8", "replace") if b is not None else None
