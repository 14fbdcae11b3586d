#include "server/scheduler.h"

#include <algorithm>
#include <cmath>
#include <future>
#include <iostream>

#include "nvfp4/error.h"
#include "nvfp4/mtp_draft.h"
#include "nvfp4/speculate.h"
#include "server/text_stream.h"

namespace nvfp4::server {

JobUpdate take(Job& job, std::chrono::milliseconds wait) {
  std::unique_lock lk(job.mu);
  job.cv.wait_for(lk, wait, [&] { return job.done || !job.text.empty() || !job.tokens.empty(); });
  JobUpdate u;
  u.text.swap(job.text);
  u.tokens.swap(job.tokens);
  u.logprobs.swap(job.logprobs);
  u.done = job.done;
  u.finish_reason = job.finish_reason;
  u.stop_sequence = job.stop_sequence;
  u.error = job.error;
  u.n_generated = job.n_generated;
  u.n_cached = job.n_cached;
  u.n_drafted = job.n_drafted;
  u.n_accepted = job.n_accepted;
  return u;
}

struct Scheduler::Slot {
  Sequence seq;
  std::shared_ptr<Job> job;  // null: free
  uint64_t order = 0;        // admission order: prompts are prefilled first come, first served
                             // (and, for a free slot, how recently it was used)
  std::vector<int32_t> cached;  // the tokens whose KV the sequence holds (cached.size() == seq.pos())
  size_t n_prompt_done = 0;
  int32_t next = -1;         // sampled, fed at the next step
  std::optional<Sampler> sampler;
  std::optional<TextStream> text;
  std::optional<OutputMatcher> checker;  // the job's grammar's, when it has one
  SpecSlot spec;
  std::vector<double> embed_sum;  // an embedding job's pooled hidden states so far
  std::vector<float> embed_rows;  // ... or its tokens' rows so far (Embed::Tokens)
  int index = 0;             // its place in slots_ (its MTP sequence's)
  Slot(const Model& m, int64_t n_ctx, KvType kv) : seq(m, n_ctx, kv) {}
};

Scheduler::Scheduler(const Model& model, const Tokenizer& tok, const SchedulerOptions& opt, Metrics& metrics)
    : model_(model), tok_(tok), opt_(opt), metrics_(metrics), backoff_(opt.spec.window, opt.spec.min_speedup) {
  if (opt_.parallel < 1) throw Error("", "--parallel", "slots (--parallel)", "at least 1", std::to_string(opt_.parallel));
  check_spec_mode(opt_.spec, model.mode());
  if (opt_.spec.draft)
    draft_ = std::make_unique<DraftBatch>(*opt_.spec.draft, opt_.parallel, opt_.n_ctx, opt_.n_batch, opt_.kv);
  if (draft_) draft_->p_min = opt_.spec.draft_p_min;
  for (int i = 0; i < opt_.parallel; ++i) {
    slots_.push_back(std::make_unique<Slot>(model, opt_.n_ctx, opt_.kv));
    slots_.back()->index = i;
  }
  if (opt_.spec.mtp) {
    mtp_ = std::make_unique<MtpProposer>(model, opt_.n_ctx, opt_.n_batch, opt_.kv, opt_.parallel);
    mtp_->p_min = opt_.spec.draft_p_min;
    mtp_->set_draft_vocab(opt_.spec.draft_vocab);
  }
  if (opt_.spec.dflash)
    for (int i = 0; i < opt_.parallel; ++i) {
      dflash_.push_back(std::make_unique<DflashProposer>(*opt_.spec.dflash, opt_.n_ctx, opt_.kv));
      dflash_.back()->p_min = opt_.spec.draft_p_min;
    }
  if (opt_.spec.assistant) {
    assistant_ = std::make_unique<AssistantProposer>(*opt_.spec.assistant, opt_.parallel);
    assistant_->p_min = opt_.spec.draft_p_min;
  }
  metrics_.slots = opt_.parallel;
  thread_ = std::thread([this] { loop(); });
}

Scheduler::~Scheduler() { stop(); }

void Scheduler::submit(std::shared_ptr<Job> job) {
  {
    std::lock_guard lk(mu_);
    if (draining_ || stopping_) throw ApiError(503, "the server is shutting down");
    if (static_cast<int>(waiting_.size()) >= opt_.queue)
      throw ApiError(429, "the queue is full (" + std::to_string(opt_.queue) + " requests waiting); retry later", "",
                     "queue_full");
    waiting_.push_back(std::move(job));
    metrics_.queue_depth = static_cast<int64_t>(waiting_.size());
  }
  cv_.notify_all();
}

namespace {
void end_job(Job& j, const std::string& reason, const std::optional<ApiError>& err) {
  {
    std::lock_guard lk(j.mu);
    if (j.done) return;
    j.done = true;
    j.finish_reason = reason;
    j.error = err;
  }
  j.cv.notify_all();
}
}  // namespace

void Scheduler::drain(std::chrono::milliseconds grace) {
  std::deque<std::shared_ptr<Job>> dropped;
  {
    std::lock_guard lk(mu_);
    draining_ = true;
    deadline_ = std::chrono::steady_clock::now() + grace;
    dropped.swap(waiting_);
    metrics_.queue_depth = 0;
  }
  for (auto& j : dropped) end_job(*j, "", ApiError(503, "the server is shutting down"));
  cv_.notify_all();
}

void Scheduler::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  std::lock_guard lk(mu_);
  for (auto& j : waiting_) end_job(*j, "", ApiError(503, "the server is shutting down"));
  waiting_.clear();
}

void Scheduler::finish(Slot& s, const std::string& reason, const std::optional<ApiError>& err) {
  if (!s.job) return;
  if (!err && s.text) {
    const std::string rest = s.text->finish();
    std::lock_guard lk(s.job->mu);
    s.job->text += rest;
    s.job->stop_sequence = s.text->matched();
  }
  // The counters first: a client that has its answer sees them counted (the back-off's too).
  if (opt_.spec.on()) {
    const std::string line = backoff_.finished();
    metrics_.spec_backed_off = backoff_.active() ? 0 : 1;
    metrics_.spec_backoffs = backoff_.backoffs();
    metrics_.spec_speedup = backoff_.speedup();
    if (!line.empty()) std::cerr << "nvfp4: " << line << std::endl;
  }
  metrics_.generations += 1;
  metrics_.active_slots -= 1;
  end_job(*s.job, reason, err);
  s.job.reset();
  s.sampler.reset();
  s.text.reset();
  s.checker.reset();
  s.embed_sum.clear();
  s.embed_rows.clear();
}

bool Scheduler::admit() {
  const bool late = draining_ && std::chrono::steady_clock::now() >= deadline_;
  // Waiting requests whose client left end now, not when a slot frees.
  for (auto it = waiting_.begin(); it != waiting_.end();) {
    if ((*it)->cancelled.load()) {
      end_job(**it, "", ApiError(503, "cancelled"));
      metrics_.cancelled += 1;
      it = waiting_.erase(it);
    } else {
      ++it;
    }
  }
  std::vector<Slot*> free;
  for (auto& sp : slots_) {
    Slot& s = *sp;
    if (s.job && (s.job->cancelled.load() || stopping_ || late)) {
      const bool gone = s.job->cancelled.load();
      if (gone) metrics_.cancelled += 1;
      finish(s, "", ApiError(503, gone ? "cancelled" : "the server is shutting down"));
    }
    if (!s.job) free.push_back(&s);
  }
  while (!free.empty() && !waiting_.empty()) {
    std::shared_ptr<Job> j = std::move(waiting_.front());
    waiting_.pop_front();
    if (j->cancelled.load()) {
      end_job(*j, "", ApiError(503, "cancelled"));
      continue;
    }
    if (j->prompt.empty() || static_cast<int64_t>(j->prompt.size()) + j->max_tokens > opt_.n_ctx) {
      end_job(*j, "", ApiError(400, "the prompt is empty or does not fit the context", "prompt"));
      continue;
    }
    // The free slot with the longest cached prefix of the prompt, at most all but its last token
    // (whose logits start the generation), that its sequence can go back to (speculate.h: a
    // recurrent layer only to a snapshot); ties and no cache: the least recently used.
    const bool reuse = opt_.cache_prompt && j->cache_prompt;
    size_t best = 0, best_n = 0;
    for (size_t k = 0; k < free.size(); ++k) {
      const size_t n = reuse ? static_cast<size_t>(reusable_prefix(free[k]->seq, free[k]->cached, j->prompt)) : 0;
      if (k == 0 || n > best_n || (n == best_n && free[k]->order < free[best]->order)) {
        best = k;
        best_n = n;
      }
    }
    // A longer prefix held by another slot (busy ones included: a system prompt that the
    // requests running now share) is copied into the least recently used free slot.
    const Slot* donor = nullptr;
    size_t donor_n = best_n;
    for (const auto& sp : slots_) {
      if (!reuse) break;
      const size_t n = static_cast<size_t>(reusable_prefix(sp->seq, sp->cached, j->prompt));
      if (n > donor_n) {
        donor = sp.get();
        donor_n = n;
      }
    }
    if (donor) {
      best = 0;
      for (size_t k = 1; k < free.size(); ++k)
        if (free[k]->order < free[best]->order) best = k;
    }
    Slot& s = *free[best];
    free.erase(free.begin() + static_cast<std::ptrdiff_t>(best));
    s.job = std::move(j);
    s.order = admitted_++;
    if (donor) {
      s.seq.copy_prefix(donor->seq, static_cast<int64_t>(donor_n));
      if (mtp_) mtp_->copy_prefix(s.index, donor->index, static_cast<int64_t>(donor_n));
      if (assistant_) assistant_->copy_prefix(s.index, donor->index, static_cast<int64_t>(donor_n));
      if (!dflash_.empty())
        dflash_[static_cast<size_t>(s.index)]->copy_prefix(*dflash_[static_cast<size_t>(donor->index)], static_cast<int64_t>(donor_n));
      s.cached.assign(donor->cached.begin(), donor->cached.begin() + static_cast<std::ptrdiff_t>(donor_n));
      best_n = donor_n;
      metrics_.prompt_tokens_copied += static_cast<int64_t>(donor_n);
    }
    s.seq.truncate(static_cast<int64_t>(best_n));
    s.cached.resize(best_n);
    s.n_prompt_done = best_n;
    s.next = -1;
    s.sampler.emplace(s.job->sampling);
    s.text.emplace(s.job->stop);
    if (s.job->grammar) s.checker.emplace(s.job->grammar);
    else s.checker.reset();
    s.spec.reset(opt_.spec);
    metrics_.active_slots += 1;
    metrics_.prompt_tokens_cached += static_cast<int64_t>(best_n);
    {
      std::lock_guard lk(s.job->mu);
      s.job->started = true;
      s.job->n_cached = static_cast<int64_t>(best_n);
    }
  }
  bool busy = false;
  for (auto& sp : slots_) busy = busy || sp->job != nullptr;
  metrics_.queue_depth = static_cast<int64_t>(waiting_.size());
  return busy;
}

void Scheduler::loop() {
  ThreadPool pool(std::max(1, opt_.threads));
  Workspace ws(model_, opt_.n_batch + opt_.parallel);
  // Rows: a generating slot's next token and its drafts (the drafts count in n_batch), or a
  // prompt's last token. Grown by step() to the rows a step writes, not allocated for the most
  // a step could (parallel + n_batch rows: 13 MiB at SmolLM2's vocabulary and the defaults).
  std::vector<float> logits;
  for (;;) {
    {
      std::unique_lock lk(mu_);
      bool busy = false;
      cv_.wait(lk, [&] {
        busy = admit();
        return busy || stopping_;
      });
      if (stopping_ && !busy) return;
    }
    step(logits, ws, pool);
  }
}

void Scheduler::step(std::vector<float>& logits, Workspace& ws, ThreadPool& pool) {
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<StepToken> toks;
  struct Rows {
    Slot* s;
    size_t first;  // its first logits row
    int64_t p0;    // the position of its first token
  };
  std::vector<Rows> rows;  // each slot's rows, in step order
  size_t n_rows = 0;
  // Prompt chunks, first admitted first.
  std::vector<Slot*> filling;
  for (auto& sp : slots_)
    if (sp->job && sp->next < 0) filling.push_back(sp.get());
  std::sort(filling.begin(), filling.end(), [](const Slot* a, const Slot* b) { return a->order < b->order; });
  int64_t budget = opt_.n_batch;
  int64_t n_prompt = 0;
  // Drafts take from the step's budget, at most half of it while prompts wait.
  int64_t draft_budget = filling.empty() ? budget : budget / 2;
  std::vector<Slot*> gen;
  std::vector<DraftBatch::Ask> asks;
  std::vector<std::vector<int32_t>> drafted(slots_.size());
  std::vector<MtpProposer::Ask> mtp_asks;
  std::vector<std::pair<size_t, int64_t>> dflash_asks;  // (slot, drafts wanted)
  std::vector<AssistantProposer::Ask> assistant_asks;
  for (size_t si = 0; si < slots_.size(); ++si) {
    Slot& s = *slots_[si];
    if (!s.job || s.next < 0) continue;
    gen.push_back(&s);
    s.cached.push_back(s.next);
    // At most draft_limit (speculate.h): one short of the tokens left, within the step's budget.
    const int64_t n = s.spec.want(opt_.spec, s.seq, s.job->max_tokens - s.job->n_generated, draft_budget,
                                  backoff_.active());
    if (n <= 0) {
      s.spec.set(opt_.spec, {});
    } else if (draft_) {
      asks.push_back({static_cast<int>(si), s.cached, n, &drafted[si]});
      draft_budget -= n;
    } else if (mtp_) {
      mtp_asks.push_back({s.index, s.cached, n, &drafted[si]});
      draft_budget -= n;
    } else if (!dflash_.empty()) {
      dflash_asks.emplace_back(si, n);
      draft_budget -= n;
    } else if (assistant_) {
      assistant_asks.push_back({s.index, s.cached, &s.seq, n, &drafted[si]});
      draft_budget -= n;
    } else {
      s.spec.lookup(opt_.spec, s.cached, n);
      draft_budget -= static_cast<int64_t>(s.spec.draft().size());
    }
  }
  double draft_s = 0;
  if (!mtp_asks.empty()) {
    const auto td = std::chrono::steady_clock::now();
    try {  // an MTP module that fails costs its drafts only: the target's picks make the output
      mtp_->propose(mtp_asks, pool);
    } catch (const std::exception&) {
      for (auto& d : drafted) d.clear();
    }
    for (const auto& q : mtp_asks) slots_[static_cast<size_t>(q.slot)]->spec.set(opt_.spec, std::move(*q.out));
    draft_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - td).count();
  }
  if (!assistant_asks.empty()) {  // every slot's draft step in one pass of the assistant
    const auto td = std::chrono::steady_clock::now();
    try {  // an assistant that fails costs its drafts only: the target's picks make the output
      assistant_->propose(assistant_asks, pool);
    } catch (const std::exception&) {
      for (auto& d : drafted) d.clear();
    }
    for (const auto& q : assistant_asks) slots_[static_cast<size_t>(q.slot)]->spec.set(opt_.spec, std::move(*q.out));
    draft_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - td).count();
  }
  if (!dflash_asks.empty()) {  // every slot's block in one pass of the drafter
    const auto td = std::chrono::steady_clock::now();
    std::vector<DflashProposer::Ask> da;
    for (const auto& [si, n] : dflash_asks) {
      Slot& s = *slots_[si];
      da.push_back({dflash_[static_cast<size_t>(s.index)].get(), s.cached, static_cast<int>(n), &drafted[si]});
    }
    try {  // a drafter that fails costs its drafts only: the target's picks make the output
      DflashProposer::propose(da, pool);
    } catch (const std::exception&) {
      for (auto& d : drafted) d.clear();
    }
    for (const auto& [si, n] : dflash_asks) slots_[si]->spec.set(opt_.spec, std::move(drafted[si]));
    draft_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - td).count();
  }
  if (!asks.empty()) {
    const auto td = std::chrono::steady_clock::now();
    // A draft model that fails costs its drafts only: the target's picks make the output.
    try {
      draft_->propose(asks, pool);
    } catch (const std::exception&) {
      for (auto& d : drafted) d.clear();
    }
    for (const auto& q : asks) slots_[static_cast<size_t>(q.slot)]->spec.set(opt_.spec, std::move(*q.out));
    draft_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - td).count();
  }
  bool drafts = false;
  for (Slot* sp : gen) {
    Slot& s = *sp;
    const int64_t p0 = s.seq.pos();
    const auto& d = s.spec.draft();
    begin_verify(s.seq, d.size());
    toks.push_back({s.next, &s.seq, p0, true});
    drafts = drafts || !d.empty();
    for (size_t i = 0; i < d.size(); ++i) {
      toks.push_back({d[i], &s.seq, p0 + 1 + static_cast<int64_t>(i), true});
      s.cached.push_back(d[i]);
    }
    budget -= static_cast<int64_t>(d.size());
    rows.push_back({&s, n_rows, p0});
    n_rows += 1 + d.size();
  }
  std::vector<Embedded> embeds;  // embedding jobs' prompt chunks: their hidden rows are pooled
  for (Slot* s : filling) {
    if (budget <= 0) break;
    const auto& p = s->job->prompt;
    const size_t n = std::min<size_t>(static_cast<size_t>(budget), p.size() - s->n_prompt_done);
    const int64_t pos0 = s->seq.pos();
    const bool embed = s->job->embed != Job::Embed::None;
    if (embed) embeds.push_back({s, toks.size(), n});
    for (size_t i = 0; i < n; ++i) {
      const bool last = s->n_prompt_done + i + 1 == p.size() && !embed;
      toks.push_back({p[s->n_prompt_done + i], &s->seq, pos0 + static_cast<int64_t>(i), last});
      s->cached.push_back(p[s->n_prompt_done + i]);
      if (last) rows.push_back({s, n_rows++, -1});
    }
    s->n_prompt_done += n;
    budget -= static_cast<int64_t>(n);
    n_prompt += static_cast<int64_t>(n);
  }
  if (toks.empty()) return;
  // A constrained slot's next mask depends only on the picks made so far: a helper thread fills
  // the masks of this step's first rows while the forward pass runs, and masked() finds them
  // ready (the masks of later draft rows follow the picks, on this thread). The matchers are
  // touched by nothing else until the helper is joined, before the picks.
  std::vector<OutputMatcher*> ahead;
  for (const Rows& r : rows)
    if (r.s->checker) ahead.push_back(&*r.s->checker);
  std::future<void> masks;
  if (!ahead.empty())
    masks = std::async(std::launch::async, [this, &ahead] {
      const auto tm = std::chrono::steady_clock::now();
      for (OutputMatcher* m : ahead) {
        try {
          m->prepare();
        } catch (const std::exception&) {  // left stale: masked() computes it again, and fails there
        }
      }
      metrics_.mask_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - tm).count();
    });
  struct Join {
    std::future<void>& f;
    void operator()() {
      if (f.valid()) f.get();
    }
    ~Join() {
      if (f.valid()) f.wait();
    }
  } join{masks};
  try {
    const size_t need = std::max<size_t>(n_rows, 1) * static_cast<size_t>(model_.config().n_vocab);
    if (logits.size() < need) logits.resize(need);
    if (opt_.spec.mtp || assistant_ || !embeds.empty() || !dflash_.empty()) {  // hidden states: MTP, assistant, embeddings, DFlash taps
      hidden_.resize(toks.size() * static_cast<size_t>(model_.config().n_embd));
      const size_t d = static_cast<size_t>(model_.config().n_embd);
      if (!dflash_.empty()) {
        const std::span<const int> tl = opt_.spec.dflash->taps();
        taps_.resize(toks.size() * tl.size() * d);
        forward(model_, toks, ws, pool, logits.data(), hidden_.data(), LayerTaps{tl, taps_.data()});
        std::vector<DflashProposer::Observed> parts;  // every slot's rows in one pass of the drafter
        for (size_t t = 0; t < toks.size();) {
          size_t e = t + 1;
          while (e < toks.size() && toks[e].seq == toks[t].seq) ++e;
          for (auto& sp : slots_)
            if (&sp->seq == toks[t].seq)
              parts.push_back({dflash_[static_cast<size_t>(sp->index)].get(), toks[t].pos, taps_.data() + t * tl.size() * d,
                               static_cast<int64_t>(e - t)});
          t = e;
        }
        try {  // a drafter that fails costs its drafts only (unobserved positions draft nothing)
          DflashProposer::observe(parts, pool);
        } catch (const std::exception&) {
        }
      } else {
        forward(model_, toks, ws, pool, logits.data(), hidden_.data());
      }
      for (size_t t = 0; t < toks.size() && (opt_.spec.mtp || assistant_);) {
        size_t e = t + 1;
        while (e < toks.size() && toks[e].seq == toks[t].seq) ++e;
        for (auto& sp : slots_)
          if (&sp->seq == toks[t].seq) {
            if (mtp_) mtp_->observe(sp->index, toks[t].pos, hidden_.data() + t * d, static_cast<int64_t>(e - t));
            if (assistant_) assistant_->observe(sp->index, toks[t].pos, hidden_.data() + t * d, static_cast<int64_t>(e - t));
          }
        t = e;
      }
    } else {
      forward(model_, toks, ws, pool, logits.data());
    }
  } catch (const std::exception& e) {
    join();
    std::lock_guard lk(mu_);
    for (auto& sp : slots_) {
      if (sp->job) finish(*sp, "", ApiError(500, std::string("inference failed: ") + e.what()));
      sp->cached.clear();  // what the caches hold is unknown now
      sp->seq.truncate(0);
    }
    return;
  }
  join();
  metrics_.prompt_tokens += n_prompt;
  pool_embeddings(embeds);
  const size_t nv = static_cast<size_t>(model_.config().n_vocab);
  // The back-off's window sees this step after the requests it ends (finish() judges a window).
  int64_t picks = 0;
  for (const Rows& r : rows) {
    const int64_t k = verify(*r.s, logits.data() + r.first * nv, r.p0);
    if (r.p0 >= 0) picks += k;
  }
  const auto dt = std::chrono::steady_clock::now() - t0;
  metrics_.steps += 1;
  metrics_.step_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(dt).count();
  if (opt_.spec.on())
    backoff_.step(static_cast<int64_t>(toks.size()), static_cast<int64_t>(gen.size()), picks, n_prompt,
                  drafts || !asks.empty() || !mtp_asks.empty() || !dflash_asks.empty() || !assistant_asks.empty(), std::chrono::duration<double>(dt).count() - draft_s, draft_s);
}

int64_t Scheduler::verify(Slot& s, const float* rows, int64_t p0) {
  const int64_t nv = model_.config().n_vocab;
  const std::vector<int32_t>& draft = s.spec.draft();
  Job& j = *s.job;
  if (!draft.empty()) {
    std::lock_guard lk(j.mu);
    j.n_drafted += static_cast<int64_t>(draft.size());
  }
  metrics_.spec_drafted += static_cast<int64_t>(draft.size());
  // Row i holds the logits after the slot's i-th step token: the pick there is the token plain
  // decoding makes; drafts are accepted while they equal it (verify_drafts, as `run` does).
  int64_t picks = 0;
  const Verdict v = verify_drafts(draft, [&](size_t i) {
    const float* row = rows + i * static_cast<size_t>(nv);
    // Constrained: the sampler sees the row with the refused tokens at -inf, and so do the
    // logprobs (as vLLM's, whose grammar bitmask is applied before its sampler computes them):
    // they are over the tokens the grammar admits, a refused token's -inf sent as -9999.
    const float* pick_row = s.checker ? masked(s, row) : row;
    if (!pick_row) {
      finish(s, "", ApiError(500, "the output's grammar admits no token here"));
      return Pick{-1, false, false};
    }
    int32_t tok = s.sampler->sample(pick_row, nv);
    if (s.checker) {
      // The sampler's last resort (rounding at the end of its cumulative sum) may land on a
      // refused token: the best allowed one instead.
      if (!allowed_[static_cast<size_t>(tok)]) tok = argmax(pick_row, nv);
      // Fail closed: a token the mask allowed but the matcher refuses (a mask wider than the
      // grammar) is masked too and the pick made again; the grammar walks the pick only.
      while (!s.checker->accept(tok)) {
        metrics_.mask_refusals += 1;
        allowed_[static_cast<size_t>(tok)] = 0;
        masked_[static_cast<size_t>(tok)] = -INFINITY;
        if (std::none_of(allowed_.begin(), allowed_.end(), [](uint8_t a) { return a != 0; })) {
          finish(s, "", ApiError(500, "the output's grammar admits no token here"));
          return Pick{-1, false, false};
        }
        tok = s.sampler->sample(masked_.data(), nv);
        if (!allowed_[static_cast<size_t>(tok)]) tok = argmax(masked_.data(), nv);
      }
    }
    ++picks;
    if (tok_.is_eog(tok)) {
      finish(s, "stop", std::nullopt);
      return Pick{tok, false, false};
    }
    const bool match = i < draft.size() && tok == draft[i];
    const std::string bytes = tok_.token_bytes(tok);
    // The grammar advances on the picks only (never on a draft before it is checked), so it
    // needs no rollback: a draft the grammar refuses differs from the masked pick and ends there.
    const bool whole = s.checker && s.checker->done();
    const std::string piece = s.text->push(bytes);
    std::optional<TokenLogprob> lp;
    if (j.top_logprobs >= 0) lp = token_logprob(s.checker ? masked_.data() : row, nv, tok, j.top_logprobs);
    int64_t n_gen = 0;
    {
      std::lock_guard lk(j.mu);
      j.text += piece;
      j.tokens.push_back(tok);
      if (lp) j.logprobs.push_back(std::move(*lp));
      n_gen = ++j.n_generated;
      if (match) ++j.n_accepted;
    }
    j.cv.notify_all();
    metrics_.generated_tokens += 1;
    if (match) metrics_.spec_accepted += 1;
    if (s.text->stopped() || n_gen >= j.max_tokens || whole) {
      finish(s, s.text->stopped() || whole ? "stop" : "length", std::nullopt);
      return Pick{tok, true, false};
    }
    return Pick{tok, true, true};
  });
  if (!v.ended) s.next = v.next;
  if (p0 >= 0) {
    // The sequence keeps the slot's next token and the drafts accepted before the last row's pick.
    end_verify(s.seq, p0, v.kept);
    s.cached.resize(static_cast<size_t>(s.seq.pos()));
    s.spec.verified(opt_.spec, v.kept);
  }
  return picks;
}

void Scheduler::pool_embeddings(const std::vector<Embedded>& chunks) {
  const size_t d = static_cast<size_t>(model_.config().n_embd);
  for (const auto& [sp, first, count] : chunks) {
    Slot& s = *sp;
    const bool last = s.job->embed == Job::Embed::Last;
    if (s.job->embed == Job::Embed::Tokens) {  // every row as it is, in token order
      s.embed_rows.insert(s.embed_rows.end(), hidden_.data() + first * d, hidden_.data() + (first + count) * d);
      if (s.n_prompt_done < s.job->prompt.size()) continue;
      {
        std::lock_guard lk(s.job->mu);
        s.job->embedding = std::move(s.embed_rows);
        s.job->n_generated = 0;
      }
      finish(s, "stop", std::nullopt);
      continue;
    }
    if (s.embed_sum.empty()) s.embed_sum.assign(d, 0.0);
    // In token order, whatever the chunks: the same sums (the same bits) however the steps cut it.
    for (size_t t = last ? first + count - 1 : first; t < first + count; ++t) {
      const float* h = hidden_.data() + t * d;
      for (size_t i = 0; i < d; ++i) s.embed_sum[i] = last ? h[i] : s.embed_sum[i] + h[i];
    }
    if (s.n_prompt_done < s.job->prompt.size()) continue;
    const double div = last ? 1.0 : static_cast<double>(s.job->prompt.size());
    std::vector<float> v(d);
    for (size_t i = 0; i < d; ++i) v[i] = static_cast<float>(s.embed_sum[i] / div);
    {
      std::lock_guard lk(s.job->mu);
      s.job->embedding = std::move(v);
      s.job->n_generated = 0;
    }
    finish(s, "stop", std::nullopt);
  }
}

const float* Scheduler::masked(Slot& s, const float* row) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t nv = static_cast<size_t>(model_.config().n_vocab);
  // A model row wider than the tokenizer's vocabulary: the rest refused.
  const int64_t n = s.checker->fill(allowed_, std::min<int64_t>(tok_.n_vocab(), static_cast<int64_t>(nv)));
  allowed_.resize(nv, 0);
  masked_.resize(nv);
  for (size_t t = 0; t < nv; ++t) masked_[t] = allowed_[t] ? row[t] : -INFINITY;
  metrics_.masks += 1;
  metrics_.mask_ns += std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return n > 0 ? masked_.data() : nullptr;
}

}  // namespace nvfp4::server
