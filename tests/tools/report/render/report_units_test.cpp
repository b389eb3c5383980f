// Each rate in its model's item and its dtype's operations: a transformer's steps in sequences/s
// (never images/s), int8 in OP/s (never FLOP/s), and a network's figure over the layers a
// family measures named as such; and Markdown that reaches no viewer as HTML.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "tests/tools/report/report_cases.h"
#include "tools/report/analyses/report.h"
#include "tools/report/analyses/summary.h"
#include "tools/report/analyses/train.h"
#include "tools/report/render/document.h"

namespace dlb::report {
namespace {

using testing::Case;
using testing::CasesRuns;

const Table* FindTable(const Document& d, const std::string& title_start) {
  for (const Section& s : d.sections)
    for (const Table& t : s.tables)
      if (t.title.rfind(title_start, 0) == 0) return &t;
  return nullptr;
}

size_t ColumnOf(const Table& t, const std::string& title) {
  for (size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i].title == title) return i;
  return t.columns.size();
}

// A training step of `model` at batch sizes 8, 16 and 32 on the GPU, 50,000 items an epoch.
std::vector<Case> Steps(const std::string& model, const std::string& keys) {
  std::vector<Case> out;
  for (int bs : {8, 16, 32}) {
    const double us = 1000 + 100.0 * bs;
    out.push_back({"train/gpu/libtorch/" + model + "/bs:" + std::to_string(bs) + "/" + keys,
                   us,
                   {{"bs", bs},
                    {"items_per_s", bs / us * 1e6},
                    {"epoch_items", 50000},
                    {"epoch_s", 50000 / bs * us / 1e6}}});
  }
  return out;
}

TEST(Units, TransformerStepsCountSequencesNotImages) {
  std::vector<Case> cases = Steps("gpt2s", "dt:bf16/pass:train/seq:1024");
  for (const Case& c : Steps("bert_base", "dt:bf16/pass:train/seq:512")) cases.push_back(c);
  for (const Case& c : Steps("resnet18_cifar", "dt:f32/pass:train")) cases.push_back(c);
  const Document d = TrainDocument(CasesRuns(cases, "NVIDIA H100"), {"cases.json"});
  const Table* t = FindTable(d, "Batch size");
  ASSERT_NE(t, nullptr);
  const size_t rate = ColumnOf(*t, "best rate");
  ASSERT_LT(rate, t->columns.size());
  int seen = 0;
  for (const auto& row : t->rows) {
    const std::string model = row[0].Text(), text = row[rate].Text();
    const bool transformer = model == "gpt2s" || model == "bert_base";
    EXPECT_EQ(text.find(transformer ? "sequences/s" : "images/s") != std::string::npos, true)
        << model << ": " << text;
    seen += transformer;
  }
  EXPECT_EQ(seen, 2);
  // No header, note or cell of the document says images/s of a transformer.
  const std::string md = RenderMarkdown(d);
  for (const std::string line : {std::string("gpt2s"), std::string("bert_base")}) {
    std::smatch m;
    EXPECT_FALSE(std::regex_search(md, m, std::regex("\\| " + line + " \\|[^\\n]*images/s")))
        << m.str();
  }
}

TEST(Units, IntegerRatesAreOpsInTheSummary) {
  const Document d =
      Summary(CasesRuns({{"gemm/gpu/cublaslt/square.8192/dt:int8", 800, {{"flop_per_s", 1.37e15}}},
                         {"gemm/gpu/cublaslt/square.8192/dt:bf16", 1500, {{"flop_per_s", 7.3e14}}}},
                        "NVIDIA H100"),
              {"cases.json"});
  const Table* t = FindTable(d, "");
  ASSERT_NE(t, nullptr);
  const size_t rate = ColumnOf(*t, "FLOP/s or OP/s (int)");
  ASSERT_LT(rate, t->columns.size());
  int checked = 0;
  for (const auto& row : t->rows) {
    std::string name;
    for (const Cell& c : row) name += c.Text() + " ";
    const std::string text = row[rate].Text();
    if (name.find("int8") != std::string::npos) {
      EXPECT_EQ(text, "1.37 POP/s");
      ++checked;
    } else if (name.find("bf16") != std::string::npos) {
      EXPECT_EQ(text, "730 TFLOP/s");
      ++checked;
    }
  }
  EXPECT_EQ(checked, 2);
}

// vgg16 in the GEMM family is its three FC layers: its rate is theirs and says so.
TEST(Units, ANetworkFigureOfSomeLayersSaysWhichLayers) {
  std::vector<Case> cases;
  for (const char* layer : {"vgg16.fc6", "vgg16.fc7", "vgg16.fc8"})
    for (const char* dev : {"cpu/onednn", "gpu/cublaslt"}) {
      Case c{"gemm/" + std::string(dev) + "/" + layer + "/bs:64/dt:f32",
             std::string(dev).rfind("cpu", 0) == 0 ? 900.0 : 30.0,
             {{"flop_per_s", 1e12}}};
      c.network = "vgg16";
      cases.push_back(c);
    }
  const Overview ov = ComputeOverview(CasesRuns(cases, "NVIDIA H100"));
  const Table t = NetworkFindings(ov);
  ASSERT_FALSE(t.rows.empty());
  EXPECT_NE(t.title.find("over the layers its family measures"), std::string::npos) << t.title;
  const size_t best = ColumnOf(t, "best batch size");
  ASSERT_LT(best, t.columns.size());
  for (const auto& row : t.rows)
    EXPECT_NE(row[best].Text().find("images/s over 3 gemm layers"), std::string::npos)
        << row[best].Text();
  bool titled = false;
  for (const Section& s : OverviewSections(ov))
    for (const Table& table : s.tables)
      titled |= table.title.rfind("Network vgg16: its gemm layers only", 0) == 0;
  EXPECT_TRUE(titled);
}

// Every cell, column and table title: <, > and & as entities; a cell cut short keeps them whole.
TEST(Markdown, CellsEscapeHtmlAndCutNoEntityInHalf) {
  Document d;
  d.title = "t";
  d.compact_markdown = true;
  Section s;
  s.title = "s";
  Table t;
  t.title = "<b>title</b>";
  t.columns = {{"<name>", "name"}, {"a & b", "ab"}, {"long", "long"}};
  t.rows.push_back({Cell("<script>alert(1)</script>"), Cell("x & y"), Cell("<iframe>")});
  t.rows.push_back({Cell("row"), Cell("z"), Cell(std::string(300, '<'))});
  s.tables.push_back(t);
  d.sections.push_back(s);
  const std::string md = RenderMarkdown(d);
  EXPECT_EQ(md.find('<'), std::string::npos) << md;
  EXPECT_EQ(md.find('>'), std::string::npos) << md;
  EXPECT_NE(md.find("| &lt;script&gt;alert(1)&lt;/script&gt; | x &amp; y | &lt;iframe&gt; |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("**&lt;b&gt;title&lt;/b&gt;**"), std::string::npos) << md;
  EXPECT_NE(md.find("| &lt;name&gt; | a &amp; b |"), std::string::npos) << md;
  EXPECT_NE(md.find("&lt;…"), std::string::npos) << md;  // cut after a whole entity
  EXPECT_FALSE(std::regex_search(md, std::regex("&[a-z]*…"))) << md;
}

}  // namespace
}  // namespace dlb::report
